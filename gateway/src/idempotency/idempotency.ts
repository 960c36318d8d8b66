import { createHash, createHmac, type Hash, type Hmac } from 'node:crypto';
import { IDEMPOTENCY_KEY_PATTERN, operationTakesIdempotencyKey } from '@dap/contracts';
import { SealedBox } from '@dap/crypto';
import type { NextFunction, Request, Response } from 'express';
import { AppError } from '@dap/http';
import type { Logger } from '@dap/logger';
import type { Redis } from '@dap/redis';
import type { BufferedResponse } from '../proxy/upstream.ts';

const REPLAY_TTL_MS = 24 * 3600 * 1000;
/** An in-flight marker outlives any request the gateway lets run, then frees the key for a retry. */
const IN_FLIGHT_TTL_MS = 120_000;
const MAX_STORED_BODY = 1024 * 1024;
/**
 * Upstream headers that describe one connection or one transfer, not the response: every other header
 * (Location, Retry-After, Set-Cookie, ETag, …) reaches the client on the first response and on each replay.
 * The gateway's own headers (rate limits, request id) are set per request and are not replayed.
 */
const UNREPLAYED_HEADERS = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'content-length',
  'date',
  'x-request-id',
]);

interface Stored {
  state: 'in_flight' | 'done';
  fingerprint: string;
  /** The response (`Replay`), in libs/crypto's sealed form. */
  sealed?: string;
}

interface Replay {
  status: number;
  headers: Record<string, string | string[]>;
  /** base64 */
  body: string;
}

/**
 * Responses are kept in Redis for a day, and some carry what must be shown only once (a webhook's signing
 * secret, an API key). So each is sealed (AES-256-GCM) under a key derived from the gateway's secret, the
 * account and the Idempotency-Key itself, which Redis never holds (its slot is a hash of it): a copy of
 * Redis opens nothing. The request's fingerprint is keyed the same way, so it says nothing about a body
 * either.
 */
function keyFor(secret: string, accountId: string, idempotencyKey: string): Buffer {
  return createHmac('sha256', secret).update(`dap-idempotency\0${accountId}\0${idempotencyKey}`).digest();
}

function sealReplay(key: Buffer, replay: Replay, slot: string): string {
  return new SealedBox(key, 'dap-idempotency').seal(JSON.stringify(replay), slot);
}

function openReplay(key: Buffer, sealed: string, slot: string): Replay | null {
  try {
    return JSON.parse(new SealedBox(key, 'dap-idempotency').open(sealed, slot).toString('utf8')) as Replay;
  } catch {
    return null;
  }
}

/** The headers of an upstream response that belong to the response itself (see UNREPLAYED_HEADERS). */
export function replayableHeaders(headers: Record<string, string | string[] | undefined>): Record<string, string | string[]> {
  const kept: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) if (value !== undefined && !UNREPLAYED_HEADERS.has(name.toLowerCase())) kept[name.toLowerCase()] = value;
  return kept;
}

/**
 * A JSON body as the service will read it, so that the same JSON with its keys in another order or other
 * whitespace is the same request: keys sorted at every level, no insignificant whitespace. Strings are written
 * out and never assigned as object keys (a `__proto__` key stays data). Any other body (an uploaded file, where
 * `1.0` and `1` are different data), or JSON that does not parse or nests too deep to walk, is compared byte
 * for byte.
 */
export function canonicalBody(body: Buffer, contentType: string | undefined): Buffer {
  const mediaType = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
  if (body.length === 0 || !(mediaType === 'application/json' || mediaType.endsWith('+json'))) return body;
  try {
    return Buffer.from(canonicalJson(JSON.parse(body.toString('utf8')) as unknown), 'utf8');
  } catch {
    return body;
  }
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const o = value as Record<string, unknown>;
    return `{${Object.keys(o)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson(o[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value);
}

async function readBody(req: Request, limit: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > limit) throw new AppError('payload_too_large', `the request body is larger than ${limit} bytes`);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

/**
 * `Idempotency-Key` on POST: the first response (below 500, and not a 429) is kept for 24 h and replayed, with
 * its headers, for the same key and the same body (as JSON: key order and whitespace do not matter); the same
 * key with another body is a 422, and while the first request runs a retry gets 409. Keys are per account.
 * Sign-up, login and logout do not take part: an unauthenticated caller has no account to scope a key to, and
 * a session cookie must never be handed to a second caller. If Redis is away the request runs once,
 * unprotected, and a log line says so.
 */
/** Only calls made for an account, to an operation that takes part. */
function takesPart(req: Request): boolean {
  return req.principal !== undefined && req.principal.kind !== 'anonymous' && req.principal.accountId !== '' && !!req.operation && operationTakesIdempotencyKey(req.operation);
}

export function idempotency(deps: { redis: Redis; bodyLimit: number; logger: Logger; secret: string; forward: (req: Request, body: Buffer) => Promise<BufferedResponse> }) {
  const send = (res: Response, r: { status: number; headers: Record<string, string | string[]>; body: Buffer }, replayed: boolean) => {
    for (const [name, value] of Object.entries(replayableHeaders(r.headers))) res.setHeader(name, value);
    if (replayed) res.setHeader('Idempotent-Replayed', 'true');
    res.status(r.status).send(r.body);
  };

  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    const key = req.header('idempotency-key');
    if (req.method !== 'POST' || key === undefined || !takesPart(req)) return next();
    try {
      if (!IDEMPOTENCY_KEY_PATTERN.test(key))
        throw new AppError('validation_failed', 'Idempotency-Key must be 1 to 255 visible ASCII characters', { errors: [{ path: 'Idempotency-Key', message: 'invalid' }] });
      const body = await readBody(req, deps.bodyLimit);
      const accountId = req.principal!.accountId;
      const sealKey = keyFor(deps.secret, accountId, key);
      const fingerprintWith = (h: Hash | Hmac, b: Buffer) => h.update(req.method).update('\0').update(req.originalUrl).update('\0').update(b).digest('hex');
      const fingerprint = fingerprintWith(createHmac('sha256', sealKey), canonicalBody(body, req.headers['content-type']));
      const slot = `idem:${accountId}:${createHash('sha256').update(key).digest('hex')}`;
      let claimed = false;
      try {
        claimed = (await deps.redis.set(slot, JSON.stringify({ state: 'in_flight', fingerprint } satisfies Stored), 'PX', IN_FLIGHT_TTL_MS, 'NX')) === 'OK';
        if (!claimed) {
          const existing = JSON.parse((await deps.redis.get(slot)) ?? 'null') as Stored | null;
          if (existing && existing.fingerprint !== fingerprint) throw new AppError('idempotency_key_reused', 'this Idempotency-Key was used with a different request body');
          if (existing?.state === 'in_flight')
            throw new AppError('idempotency_key_in_use', 'a request with this Idempotency-Key is still in progress; retry later', { retryAfterSeconds: 1 });
          const replay = existing?.state === 'done' && existing.sealed ? openReplay(sealKey, existing.sealed, slot) : null;
          if (replay) return send(res, { status: replay.status, headers: replay.headers, body: Buffer.from(replay.body, 'base64') }, true);
          claimed = true; // expired between SET and GET (or unreadable, as after a change of the gateway's secret): run it
        }
      } catch (err) {
        if (err instanceof AppError) throw err;
        deps.logger.warn({ err: (err as Error).message, requestId: req.requestId }, 'idempotency store unavailable; running the request unprotected');
        return send(res, await deps.forward(req, body), false);
      }
      let result: BufferedResponse;
      try {
        result = await deps.forward(req, body);
      } catch (err) {
        await deps.redis.del(slot).catch(() => {});
        throw err;
      }
      // A 429 says "retry later": replaying it for a day would refuse the retry it asks for.
      if (result.status < 500 && result.status !== 429 && result.body.length <= MAX_STORED_BODY) {
        const headers = replayableHeaders(result.headers);
        const stored: Stored = { state: 'done', fingerprint, sealed: sealReplay(sealKey, { status: result.status, headers, body: result.body.toString('base64') }, slot) };
        await deps.redis.set(slot, JSON.stringify(stored), 'PX', REPLAY_TTL_MS).catch(() => {});
      } else {
        await deps.redis.del(slot).catch(() => {});
      }
      send(res, result, false);
    } catch (err) {
      next(err);
    }
  };
}
