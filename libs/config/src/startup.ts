import { backoffDelay } from '@dap/retry';

/**
 * Start-up connections (MongoDB, Kafka) are retried for a bounded period, because on a loaded machine or
 * during a rolling start the dependency may answer only after a few seconds. Each retry is logged; the
 * last error ends start-up with a clear message.
 */
export interface StartupLogger {
  warn(obj: object, msg: string): void;
}

export class StartupError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'StartupError';
  }
}

export interface StartupRetry<T> {
  /** What is being reached, as it may appear in a log line: hosts only, never credentials. */
  what: string;
  attempt: () => Promise<T>;
  /** False for errors waiting cannot fix (bad credentials, a malformed URL): those fail at once. */
  retriable: (err: unknown) => boolean;
  /** The start-up period: no attempt starts after it (an attempt running then is allowed to finish). */
  timeoutMs: number;
  logger: StartupLogger;
  /** Backoff between attempts: 250 ms doubling up to 5 s, each ±20 % so restarted replicas spread out. */
  initialDelayMs?: number;
  maxDelayMs?: number;
  /** Seams for tests. */
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
  random?: () => number;
}

/** `name: message` of an error, short, with any `//user:password@` in it reduced to `//***@`. */
export function describeError(err: unknown): string {
  const e = err as { name?: unknown; message?: unknown } | null;
  const text = e && typeof e.message === 'string' ? `${typeof e.name === 'string' ? e.name : 'Error'}: ${e.message}` : String(err);
  return redactUrlCredentials(text).slice(0, 500);
}

export const redactUrlCredentials = (text: string) => text.replace(/\/\/[^\s/@]*@/g, '//***@');

export async function retryDuringStartup<T>(o: StartupRetry<T>): Promise<T> {
  const now = o.now ?? Date.now;
  const sleep = o.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const random = o.random ?? Math.random;
  const initial = o.initialDelayMs ?? 250;
  const max = o.maxDelayMs ?? 5_000;
  const started = now();
  const deadline = started + o.timeoutMs;
  for (let attempt = 1; ; attempt++) {
    try {
      return await o.attempt();
    } catch (err) {
      const reason = describeError(err);
      if (!o.retriable(err)) throw new StartupError(`${o.what}: ${reason} (not retried: waiting cannot fix this)`, { cause: err });
      const left = deadline - now();
      if (left <= 0) {
        throw new StartupError(`${o.what} did not answer within the start-up period of ${o.timeoutMs} ms (${attempt} attempts); last error: ${reason}`, { cause: err });
      }
      const delay = Math.max(0, Math.min(backoffDelay(attempt - 1, { baseMs: initial, capMs: max, jitter: [0.8, 1.2] }, random), left));
      o.logger.warn({ attempt, retryInMs: delay, elapsedMs: now() - started, startupTimeoutMs: o.timeoutMs, err: reason }, `${o.what} not reachable yet; retrying`);
      await sleep(delay);
    }
  }
}
