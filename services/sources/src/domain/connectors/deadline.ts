import { ConnectorCheckError } from './connector.ts';
import { PullTimeoutError } from './remote-errors.ts';

export function formatDuration(ms: number): string {
  if (ms < 1_000) return `${ms} ms`;
  if (ms < 120_000) return `${Math.round(ms / 100) / 10} s`;
  if (ms < 2 * 3_600_000) return `${Math.round(ms / 60_000)} min`;
  return `${Math.round(ms / 360_000) / 10} h`;
}

/**
 * Runs `fn` with a signal that aborts after `ms` or when `parent` aborts (shutdown). Whatever `fn` throws
 * once the deadline has fired becomes one clear reason: "<what> took longer than <ms>".
 */
export async function withDeadline<T>(parent: AbortSignal, ms: number, what: string, fn: (signal: AbortSignal) => Promise<T>, field = 'url'): Promise<T> {
  const controller = new AbortController();
  const timeout = new PullTimeoutError(`${what} took longer than ${formatDuration(ms)}`);
  const timer = setTimeout(() => controller.abort(timeout), ms);
  const onParent = () => controller.abort(parent.reason);
  if (parent.aborted) onParent();
  else parent.addEventListener('abort', onParent, { once: true });
  try {
    return await fn(controller.signal);
  } catch (err) {
    if (controller.signal.reason === timeout) throw new ConnectorCheckError(field, timeout.message);
    throw err;
  } finally {
    clearTimeout(timer);
    parent.removeEventListener('abort', onParent);
  }
}
