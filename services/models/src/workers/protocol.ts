import { parentPort, workerData } from 'node:worker_threads';

/**
 * The message protocol between a WorkerPool and its worker threads: one job at a time per worker, each
 * answered by a reply with the same id. A worker announces `{ready: true}` once its module has loaded.
 *
 * A worker thread must not be terminated while a native addon (DuckDB, onnxruntime) has asynchronous work
 * in flight: the addon's completion then throws into a torn-down environment and aborts the whole process.
 * So a job marks its native sections, the pool terminates a worker only outside them, and a cancelled job
 * is asked to stop (its signal aborts, which interrupts a DuckDB query). The mark is one shared Int32 per
 * worker, changed with compare-and-swap on both sides, so "enter native work" and "terminate" can never
 * both win: the worker moves it JS → NATIVE and back, the pool JS → TERMINATING.
 */
export const PHASE_JS = 0;
export const PHASE_NATIVE = 1;
export const PHASE_TERMINATING = 2;
export interface JobRequest<P> {
  id: number;
  payload: P;
}
export interface CancelRequest {
  cancel: number;
}
export type JobReply<R> = { id: number; ok: true; result: R } | { id: number; ok: false; error: string; expected: boolean };
export interface PhaseMessage {
  id: number;
  phase: 'native' | 'js';
}

export interface JobContext {
  /** Aborted when the pool cancels the job (time limit, caller gone). */
  signal: AbortSignal;
  /** Runs native asynchronous work; the worker is not terminated while it is in flight. */
  native<T>(work: () => Promise<T>): Promise<T>;
}

/** Serves jobs on this worker thread; `expected(err)` marks errors whose message is meant for the caller. */
export function serveJobs<P, R>(handle: (payload: P, ctx: JobContext) => Promise<R> | R, expected: (err: unknown) => boolean = () => false): void {
  const port = parentPort;
  if (!port) return;
  const shared = (workerData as { phase?: SharedArrayBuffer } | null)?.phase;
  const phase = shared ? new Int32Array(shared) : new Int32Array(1);
  const running = new Map<number, AbortController>();
  port.on('message', async (msg: JobRequest<P> | CancelRequest) => {
    if ('cancel' in msg) return void running.get(msg.cancel)?.abort();
    const abort = new AbortController();
    running.set(msg.id, abort);
    let depth = 0;
    const ctx: JobContext = {
      signal: abort.signal,
      native: async (work) => {
        if (depth === 0) {
          // Losing the swap means the pool is terminating this worker: never start native work then.
          if (Atomics.compareExchange(phase, 0, PHASE_JS, PHASE_NATIVE) !== PHASE_JS) return new Promise<never>(() => {});
          port.postMessage({ id: msg.id, phase: 'native' } satisfies PhaseMessage);
        }
        depth++;
        try {
          return await work();
        } finally {
          if (--depth === 0) {
            Atomics.store(phase, 0, PHASE_JS);
            port.postMessage({ id: msg.id, phase: 'js' } satisfies PhaseMessage);
          }
        }
      },
    };
    let reply: JobReply<R>;
    try {
      reply = { id: msg.id, ok: true, result: await handle(msg.payload, ctx) };
    } catch (err) {
      reply = { id: msg.id, ok: false, error: err instanceof Error ? err.message : String(err), expected: expected(err) };
    } finally {
      running.delete(msg.id);
    }
    port.postMessage(reply);
  });
  port.postMessage({ ready: true });
}
