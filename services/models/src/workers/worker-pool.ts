import { Worker } from 'node:worker_threads';
import { DomainError } from '@dap/errors';
import type { Logger } from '@dap/logger';
import { PHASE_JS, PHASE_NATIVE, PHASE_TERMINATING, type JobReply, type PhaseMessage } from './protocol.ts';

/** A job failed inside the worker; `expected` errors carry a message meant for the API caller. */
export class WorkerJobError extends Error {
  readonly expected: boolean;
  constructor(message: string, expected: boolean) {
    super(message);
    this.name = 'WorkerJobError';
    this.expected = expected;
  }
}
export class WorkerTimeoutError extends Error {
  constructor(ms: number) {
    super(`the job ran longer than ${ms} ms`);
    this.name = 'WorkerTimeoutError';
  }
}
export class WorkerAbortedError extends Error {
  constructor() {
    super('the job was cancelled');
    this.name = 'WorkerAbortedError';
  }
}

interface Job<P, R> {
  id: number;
  payload: P;
  timeoutMs: number | null;
  signal: AbortSignal | null;
  resolve: (result: R) => void;
  reject: (err: Error) => void;
  settled: boolean;
  timer: NodeJS.Timeout | null;
  onAbort: (() => void) | null;
}

interface Slot<P, R> {
  worker: Worker;
  job: Job<P, R> | null;
  /** Shared with the worker: PHASE_JS, PHASE_NATIVE (terminating now would abort the process) or PHASE_TERMINATING. */
  phase: Int32Array;
  /** Its job was cancelled while native: terminate as soon as it leaves native work (or reuse it if it answers). */
  doomed: boolean;
}

/** Terminates a worker unless it is inside native work; true when it is going. */
function terminateIfSafe(slot: { worker: Worker; phase: Int32Array }): boolean {
  if (Atomics.compareExchange(slot.phase, 0, PHASE_JS, PHASE_TERMINATING) !== PHASE_JS && Atomics.load(slot.phase, 0) !== PHASE_TERMINATING) return false;
  void slot.worker.terminate();
  return true;
}

export interface WorkerPoolOptions {
  /** For logs: "predict", "train". */
  name: string;
  /** The worker module, imported by package name from the process's working directory (repo or image root). */
  module: string;
  size: number;
  logger: Logger;
  /** Jobs waiting for a free worker beyond which `run` answers 503. */
  maxQueue?: number;
  bootTimeoutMs?: number;
}

/**
 * A few worker threads that run CPU-heavy jobs off the event loop. Jobs queue up to `maxQueue`; beyond
 * that the caller gets a 503 to retry. A job may have a time limit and an abort signal: either settles the
 * job at once and ends its work by terminating the worker (replaced, as is a worker that dies) — but never
 * inside a native section (see protocol.ts): there the job is asked to stop, and the worker is terminated
 * when it leaves native work, or kept if it answers first.
 */
export class WorkerPool<P, R> {
  private readonly slots: Slot<P, R>[] = [];
  private readonly queue: Job<P, R>[] = [];
  private readonly opts: Required<WorkerPoolOptions>;
  private nextId = 1;
  private stopping = false;
  /** Jobs answered by a worker (successfully or not). */
  completed = 0;

  get size(): number {
    return this.slots.length;
  }

  /** Jobs waiting for a worker. */
  get queued(): number {
    return this.queue.length;
  }

  private constructor(opts: WorkerPoolOptions) {
    this.opts = { maxQueue: 32, bootTimeoutMs: 15_000, ...opts };
  }

  /** Starts `size` workers and waits until they are ready; null (with a warning) when they cannot start. */
  static async start<P, R>(opts: WorkerPoolOptions): Promise<WorkerPool<P, R> | null> {
    const pool = new WorkerPool<P, R>(opts);
    try {
      // Boot concurrently (each imports its module); if one fails, the others are terminated below.
      const booted = await Promise.allSettled(Array.from({ length: opts.size }, () => pool.spawn()));
      for (const b of booted) if (b.status === 'fulfilled') pool.slots.push(pool.slotOf(b.value.worker, b.value.phase));
      const failed = booted.find((b) => b.status === 'rejected');
      if (failed) throw failed.reason;
      return pool;
    } catch (err) {
      opts.logger.warn({ err, pool: opts.name }, 'worker threads could not start');
      await pool.stop();
      return null;
    }
  }

  run(payload: P, opts: { timeoutMs?: number; signal?: AbortSignal } = {}): Promise<R> {
    if (this.stopping) return Promise.reject(new DomainError('service_stopping', 'the service is shutting down', { retryAfterSeconds: 1 }));
    if (this.queue.length >= this.opts.maxQueue) {
      return Promise.reject(new DomainError('service_busy', `too many ${this.opts.name} jobs are waiting; retry shortly`, { retryAfterSeconds: 1 }));
    }
    if (opts.signal?.aborted) return Promise.reject(new WorkerAbortedError());
    return new Promise((resolve, reject) => {
      const job: Job<P, R> = {
        id: this.nextId++,
        payload,
        timeoutMs: opts.timeoutMs ?? null,
        signal: opts.signal ?? null,
        resolve,
        reject,
        settled: false,
        timer: null,
        onAbort: null,
      };
      if (job.signal) {
        job.onAbort = () => this.cancel(job, new WorkerAbortedError());
        job.signal.addEventListener('abort', job.onAbort, { once: true });
      }
      this.queue.push(job);
      this.dispatch();
    });
  }

  /** Settles every job, asks running ones to stop, waits (up to `graceMs`) for native work to end, then terminates. */
  async stop(graceMs = 10_000): Promise<void> {
    this.stopping = true;
    for (const job of this.queue.splice(0)) this.settle(job, new DomainError('service_stopping', 'the service is shutting down'));
    for (const slot of this.slots) {
      if (!slot.job) continue;
      slot.worker.postMessage({ cancel: slot.job.id });
      this.settle(slot.job, new DomainError('service_stopping', 'the service is shutting down'));
    }
    const deadline = Date.now() + graceMs;
    const pending = new Set(this.slots);
    const exits: Promise<number>[] = [];
    for (;;) {
      for (const slot of [...pending]) {
        if (Atomics.compareExchange(slot.phase, 0, PHASE_JS, PHASE_TERMINATING) === PHASE_NATIVE) continue;
        pending.delete(slot);
        exits.push(slot.worker.terminate());
      }
      if (!pending.size || Date.now() >= deadline) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    if (pending.size) {
      this.opts.logger.warn({ pool: this.opts.name }, 'a worker is still in native work at shutdown; terminating it anyway');
      for (const slot of pending) exits.push(slot.worker.terminate());
    }
    await Promise.all(exits);
    this.slots.length = 0;
  }

  private slotOf(worker: Worker, phase: Int32Array): Slot<P, R> {
    return { worker, job: null, phase, doomed: false };
  }

  private settle(job: Job<P, R>, outcome: Error | { result: R }): void {
    if (job.settled) return;
    job.settled = true;
    if (job.timer) clearTimeout(job.timer);
    if (job.signal && job.onAbort) job.signal.removeEventListener('abort', job.onAbort);
    if (outcome instanceof Error) job.reject(outcome);
    else job.resolve(outcome.result);
  }

  /** Ends a job early: a queued one leaves the queue; a running one takes its worker down with it (safely). */
  private cancel(job: Job<P, R>, err: Error): void {
    const queuedAt = this.queue.indexOf(job);
    if (queuedAt >= 0) this.queue.splice(queuedAt, 1);
    this.settle(job, err);
    const slot = this.slots.find((s) => s.job === job);
    if (!slot) return;
    slot.worker.postMessage({ cancel: job.id });
    if (!terminateIfSafe(slot)) slot.doomed = true; // the exit handler replaces a terminated worker
  }

  private dispatch(): void {
    for (const slot of this.slots) {
      if (slot.job || !this.queue.length) continue;
      const job = this.queue.shift()!;
      slot.job = job;
      if (job.timeoutMs !== null) {
        const ms = job.timeoutMs;
        job.timer = setTimeout(() => this.cancel(job, new WorkerTimeoutError(ms)), ms);
      }
      slot.worker.postMessage({ id: job.id, payload: job.payload });
    }
  }

  private spawn(): Promise<{ worker: Worker; phase: Int32Array }> {
    const module = this.opts.module;
    // An eval'd worker runs as CommonJS, so it can report a failed import through `require`.
    const code =
      `import(${JSON.stringify(module)}).catch((err) => ` + `require('node:worker_threads').parentPort.postMessage({ bootError: String((err && err.message) || err) }));`;
    const shared = new SharedArrayBuffer(4);
    const phase = new Int32Array(shared);
    const worker = new Worker(code, { eval: true, workerData: { phase: shared } });
    return new Promise((resolve, reject) => {
      const fail = (err: Error) => {
        clearTimeout(timer);
        worker.off('exit', onExit);
        void worker.terminate();
        reject(err);
      };
      const timer = setTimeout(() => fail(new Error(`a ${this.opts.name} worker did not start in time`)), this.opts.bootTimeoutMs);
      const onExit = (code: number) => fail(new Error(`a ${this.opts.name} worker exited with code ${code} while starting`));
      worker.once('exit', onExit);
      worker.once('message', (msg: { ready?: boolean; bootError?: string }) => {
        if (!msg.ready) return fail(new Error(`a ${this.opts.name} worker could not load ${module}: ${msg.bootError ?? 'unknown error'}`));
        clearTimeout(timer);
        worker.off('exit', onExit);
        this.attach(worker);
        resolve({ worker, phase });
      });
    });
  }

  private attach(worker: Worker): void {
    worker.on('message', (msg: JobReply<R> | PhaseMessage) => {
      const slot = this.slots.find((s) => s.worker === worker);
      const job = slot?.job;
      if (!slot || !job || job.id !== msg.id) return;
      if ('phase' in msg) {
        if (msg.phase === 'js' && slot.doomed && terminateIfSafe(slot)) slot.doomed = false;
        return;
      }
      // The job answered: the worker is idle and whole again, even if the job was cancelled meanwhile.
      if (Atomics.load(slot.phase, 0) === PHASE_TERMINATING) return; // too late: it is going
      slot.job = null;
      slot.doomed = false;
      this.completed++;
      this.settle(job, msg.ok ? { result: msg.result } : new WorkerJobError(msg.error, msg.expected));
      this.dispatch();
    });
    worker.on('error', (err) => this.opts.logger.error({ err, pool: this.opts.name }, 'worker thread failed'));
    worker.on('exit', (code) => {
      const index = this.slots.findIndex((s) => s.worker === worker);
      if (index < 0 || this.stopping) return;
      const [slot] = this.slots.splice(index, 1);
      if (slot?.job) this.settle(slot.job, new Error(`${this.opts.name} worker exited with code ${code}`));
      this.opts.logger.warn({ code, pool: this.opts.name }, 'worker thread exited; starting another');
      this.spawn().then(
        ({ worker: w, phase }) => {
          if (this.stopping) return void w.terminate();
          this.slots.push(this.slotOf(w, phase));
          this.dispatch();
        },
        (err) => this.opts.logger.error({ err, pool: this.opts.name }, 'could not replace a worker thread'),
      );
    });
  }
}
