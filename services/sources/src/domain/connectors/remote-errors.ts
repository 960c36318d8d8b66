import { DisallowedTargetError, HostNotFoundError } from '@dap/netguard';
import { ConnectorCheckError } from './connector.ts';

/** The pull ran past its time limit (connect, idle or total); the message names which. */
export class PullTimeoutError extends Error {
  readonly code = 'ERR_PULL_TIMEOUT';
  constructor(message: string) {
    super(message);
    this.name = 'PullTimeoutError';
  }
}

/** The server's HTTP response breaks the protocol (its framing, or a connection cut short); the message says how. */
export class HttpProtocolError extends Error {
  readonly code = 'ERR_HTTP_PROTOCOL';
  constructor(message: string) {
    super(message);
    this.name = 'HttpProtocolError';
  }
}

/** The remote data is larger than SOURCE_MAX_BYTES. */
export class TooLargeError extends Error {
  readonly code = 'ERR_TOO_LARGE';
  constructor(maxBytes: number) {
    super(`the data is larger than the limit of ${formatBytes(maxBytes)}`);
    this.name = 'TooLargeError';
  }
}

export function formatBytes(n: number): string {
  const units = ['bytes', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  let v = n;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return i === 0 ? `${n} bytes` : `${Number.isInteger(v) ? v : v.toFixed(1)} ${units[i]}`;
}

const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Belt and braces: a message shown to a customer or logged never carries a password, even if a driver echoed one. */
export function scrub(message: string, secrets: ReadonlyArray<string | undefined>): string {
  let out = message;
  for (const s of secrets) {
    if (!s || s.length < 3) continue;
    for (const form of new Set([s, encodeURIComponent(s)])) out = out.replace(new RegExp(escapeRe(form), 'g'), '[redacted]');
  }
  return out;
}

/** Whether `test` holds for the error or one of its causes (drivers wrap what a socket or `lookup` threw). */
function inCauses(err: unknown, test: (e: unknown, code: string) => boolean): boolean {
  let e = err as { code?: unknown; cause?: unknown } | null | undefined;
  for (let depth = 0; depth <= 5 && e !== undefined && e !== null; depth++) {
    if (test(e, typeof e.code === 'string' ? e.code : '')) return true;
    if (e.cause === e) return false;
    e = e.cause as typeof e;
  }
  return false;
}

/** OpenSSL's own failures (ERR_SSL_*: a server that does not speak TLS on that port answers "wrong version number"). */
const TLS_FAILURE = /^ERR_TLS|^ERR_SSL_|^EPROTO$|CERT|^DEPTH_ZERO|^UNABLE_TO|^SELF_SIGNED/;

const refusedByGuard = (e: unknown, code: string) => e instanceof DisallowedTargetError || code === 'ERR_DISALLOWED_TARGET';

/** Whether the SSRF guard refused the target, here or in an error's causes. */
export function isTargetRefusal(err: unknown): boolean {
  return inCauses(err, refusedByGuard);
}

/**
 * Whether a failed connection attempt is final: refused, an unknown host, an unreachable network, a target the
 * guard refuses, or TLS that cannot agree. Trying again within the same check would fail the same way (unlike a
 * timeout or a reset).
 */
export function isFinalConnectFailure(err: unknown): boolean {
  return inCauses(
    err,
    (e, code) => refusedByGuard(e, code) || e instanceof HostNotFoundError || /^(ECONNREFUSED|ENOTFOUND|EHOSTUNREACH|ENETUNREACH)$/.test(code) || TLS_FAILURE.test(code),
  );
}

/** A connection that failed for a network reason, as the connector's failure on `field`, or null when it is not one. */
export function networkFailure(err: unknown, field: string, prefix: string): ConnectorCheckError | null {
  const net = describeNetworkError(err);
  return net === null ? null : new ConnectorCheckError(field, `${prefix}: ${net}`, { targetRefused: isTargetRefusal(err) });
}

/** A short, customer-safe description of why a connection or a read failed, or null when it is not a network error. */
export function describeNetworkError(err: unknown): string | null {
  if (
    err instanceof DisallowedTargetError ||
    err instanceof HostNotFoundError ||
    err instanceof PullTimeoutError ||
    err instanceof TooLargeError ||
    err instanceof HttpProtocolError
  ) {
    return err.message;
  }
  const e = err as { code?: unknown; message?: unknown; cause?: unknown };
  const code = typeof e?.code === 'string' ? e.code : '';
  switch (code) {
    case 'ERR_DISALLOWED_TARGET':
      return typeof e.message === 'string' ? e.message : 'the target address is not allowed';
    case 'ECONNREFUSED':
      return 'the connection was refused';
    case 'ECONNRESET':
    case 'EPIPE':
      return 'the connection was reset';
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return 'the host was not found';
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return 'the host is unreachable';
    case 'ETIMEDOUT':
    case 'ETIMEOUT':
      return 'the connection timed out';
  }
  if (TLS_FAILURE.test(code)) return `TLS error (${code})`;
  // Any other system error on the socket is the connection's, not ours.
  if (/^E[A-Z0-9]+$/.test(code)) return `the connection failed (${code})`;
  if (e?.cause && e.cause !== err) return describeNetworkError(e.cause);
  return null;
}
