import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { INTERNAL_CONTEXT_HEADER, INTERNAL_SIGNATURE_HEADER, newId, SCOPES, signCallerContext, type Column, type Plan } from '@dap/contracts';

/** The test stack's addresses: the shared infrastructure and the connector test databases. */
export interface StackEnv {
  REDIS_URL: string;
  KAFKA_BROKERS: string;
  MONGO_URL: string;
  POSTGRES_URL: string;
  MYSQL_URL: string;
}

/** Reads the test stack's addresses (written by `deploy/local/stack.sh up test`), each overridable by `TEST_<NAME>`. */
export function stackEnv(): StackEnv {
  const file = join(repoRoot(), '.local', 'test', 'stack.env');
  const fromFile: Record<string, string> = {};
  if (existsSync(file)) {
    for (const line of readFileSync(file, 'utf8').split('\n')) {
      const i = line.indexOf('=');
      if (i > 0) fromFile[line.slice(0, i)] = line.slice(i + 1);
    }
  }
  const pick = (k: string) => process.env[`TEST_${k}`] ?? fromFile[k] ?? '';
  const env: StackEnv = {
    REDIS_URL: pick('REDIS_URL'),
    KAFKA_BROKERS: pick('KAFKA_BROKERS'),
    MONGO_URL: pick('MONGO_URL'),
    POSTGRES_URL: pick('POSTGRES_URL'),
    MYSQL_URL: pick('MYSQL_URL'),
  };
  const missing = (['KAFKA_BROKERS', 'MONGO_URL', 'POSTGRES_URL', 'MYSQL_URL'] as const).filter((k) => !env[k]);
  if (missing.length) {
    throw new Error(`the test stack is not running (${missing.join(', ')} unknown): run \`npm test\` (or \`bash deploy/local/stack.sh up test\`) first`);
  }
  return env;
}

export function repoRoot(): string {
  let dir = process.cwd();
  while (!existsSync(join(dir, 'tsconfig.base.json'))) {
    const up = join(dir, '..');
    if (up === dir) throw new Error('repo root not found');
    dir = up;
  }
  return dir;
}

/** A unique, short suffix so each test file gets its own databases, topics and consumer groups. */
export function uniqueSuffix(): string {
  return randomBytes(4).toString('hex');
}

export const TEST_INTERNAL_SECRET = 'test-internal-secret-0123456789abcdef0123456789';

/** The signed caller context the gateway adds to a request, for calling a service directly (tests, benches). */
export function callerHeaders(accountId: string, opts: { plan?: Plan; requestId?: string } = {}): Record<string, string> {
  const { context, signature } = signCallerContext(TEST_INTERNAL_SECRET, {
    accountId,
    plan: opts.plan ?? 'starter',
    scopes: [...SCOPES],
    requestId: opts.requestId ?? newId('req'),
    issuedAt: Date.now(),
  });
  return { [INTERNAL_CONTEXT_HEADER]: context, [INTERNAL_SIGNATURE_HEADER]: signature };
}

export async function waitFor<T>(
  fn: () => Promise<T | undefined | null | false> | T | undefined | null | false,
  opts: { timeoutMs?: number; intervalMs?: number; what?: string } = {},
): Promise<T> {
  const deadline = Date.now() + (opts.timeoutMs ?? 20_000);
  let lastErr: unknown;
  while (Date.now() < deadline) {
    try {
      const v = await fn();
      if (v) return v as T;
    } catch (err) {
      lastErr = err;
    }
    await new Promise((r) => setTimeout(r, opts.intervalMs ?? 100));
  }
  throw new Error(`timed out waiting for ${opts.what ?? 'condition'}${lastErr ? `: ${(lastErr as Error).message}` : ''}`);
}

export interface ReceivedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  at: number;
}

/**
 * A real HTTP server on loopback that records every request, body read whole, in `received` (`path` is the
 * request target, query included), and hands it with the response to `handle` to answer.
 */
export async function startRecordingServer(handle: (req: ReceivedRequest, res: ServerResponse) => void) {
  const received: ReceivedRequest[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const r: ReceivedRequest = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() };
      received.push(r);
      handle(r, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A loopback URL nothing listens on (a port just taken and let go), to see how a client fails to connect. */
export async function unreachableUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const port = (server.address() as AddressInfo).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}

/** A recording server (see startRecordingServer) answering in plain text; `respond` decides each answer. */
export async function startReceiver(
  respond: (req: ReceivedRequest) => { status: number; delayMs?: number; headers?: Record<string, string>; body?: string } = () => ({ status: 200 }),
) {
  const timers = new Set<NodeJS.Timeout>();
  const server = await startRecordingServer((r, res) => {
    const { status, delayMs, headers, body } = respond(r);
    const send = () => res.writeHead(status, { 'content-type': 'text/plain', ...headers }).end(body ?? 'ok');
    if (delayMs) {
      const t = setTimeout(() => {
        timers.delete(t);
        send();
      }, delayMs);
      timers.add(t);
    } else send();
  });
  return {
    ...server,
    close: () => {
      for (const t of timers) clearTimeout(t);
      timers.clear();
      return server.close();
    },
  };
}

/** JSON over fetch with the response body parsed, for readable assertions. */
export async function http(method: string, url: string, opts: { body?: unknown; headers?: Record<string, string> } = {}) {
  const res = await fetch(url, {
    method,
    headers: { ...(opts.body !== undefined ? { 'content-type': 'application/json' } : {}), ...opts.headers },
    body: opts.body === undefined ? undefined : typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body),
  });
  const text = await res.text();
  let json: any; // eslint-disable-line @typescript-eslint/no-explicit-any -- test bodies are asserted field by field
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, body: json, text };
}

/** The environment of one service under test on the test stack, with its own database and topic prefix. */
export function serviceTestEnv(db: string, topicPrefix: string, extra: Record<string, string> = {}): Record<string, string> {
  return { ...stackEnv(), MONGO_DB: db, KAFKA_TOPIC_PREFIX: topicPrefix, HOST: '127.0.0.1', PORT: '0', INTERNAL_SECRET: TEST_INTERNAL_SECRET, LOG_LEVEL: 'silent', ...extra };
}

/** Calls a service directly as `accountId` (with the gateway's signed caller context), on paths under /v1. */
export function serviceClient(base: () => string, accountId: string) {
  const call = (method: string, path: string, body?: unknown) => http(method, `${base()}/v1${path}`, { headers: callerHeaders(accountId), body });
  return {
    get: (path: string) => call('GET', path),
    post: (path: string, body: unknown) => call('POST', path, body),
    del: (path: string) => call('DELETE', path),
  };
}

/**
 * A dataset schema written as `{ name: type }` in column order, to compare with a source's or a result's
 * columns (or, with other type names, a database's columns).
 */
export function columns<T extends string = Column['type']>(spec: Record<string, T>): { name: string; type: T }[] {
  return Object.entries(spec).map(([name, type]) => ({ name, type }));
}

/**
 * A clock for the code under test that runs with real time but can be moved forward, to pass an expiry or a
 * grace period without waiting for it: give `now` to the code, call `advance(ms)` in the test.
 */
export function testClock() {
  let offset = 0;
  return {
    now: () => Date.now() + offset,
    advance(ms: number) {
      offset += ms;
    },
  };
}

/**
 * An OpenAPI document with its shared responses, parameters and headers written out where they are referred
 * to (schema refs stay), for tests that walk each operation's own answers.
 */
export function inlineSharedComponents<T>(doc: T): T {
  const components = (doc as { components?: Record<string, Record<string, unknown>> }).components ?? {};
  const inline = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(inline);
    if (!v || typeof v !== 'object') return v;
    const ref = (v as { $ref?: unknown }).$ref;
    const shared = typeof ref === 'string' ? /^#\/components\/(responses|parameters|headers)\/(.+)$/.exec(ref) : null;
    if (shared) {
      const target = components[shared[1]!]?.[shared[2]!];
      if (target === undefined) throw new Error(`${String(ref)} names no component`);
      return inline(target);
    }
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, inline(x)]));
  };
  return inline(doc) as T;
}
