import { Worker } from 'node:worker_threads';
import { AppError } from '@dap/http';
import type { Logger } from '@dap/logger';
import type { WorkerResponse } from '../predict.worker.ts';
import type { PredictionOutput } from './runtime.ts';

interface Job {
  id: number;
  modelId: string;
  inputs: readonly unknown[];
  resolve: (outputs: PredictionOutput[]) => void;
  reject: (err: Error) => void;
}

interface Slot {
  worker: Worker;
  job: Job | null;
}


/** The worker module, resolved by package name from the process's working directory (the repo or image root). */
export const PREDICT_WORKER_MODULE = '@dap/models/predict-worker';

/**
 * A few worker threads that run large prediction batches off the event loop, so one big request never
 * stalls the small ones. Jobs queue up to `maxQueue`; beyond that the caller gets a 503 to retry. A worker
 * that dies fails its job and is replaced.
 */
export class PredictWorkerPool {
  private readonly slots: Slot[] = [];
  private readonly queue: Job[] = [];
  private readonly logger: Logger;
  private readonly maxQueue: number;
  private readonly module: string;
  private nextId = 1;
  private stopping = false;
  completed = 0;

  get size(): number {
    return this.slots.length;
  }

  private constructor(opts: { logger: Logger; maxQueue: number; module: string }) {
    this.logger = opts.logger;
    this.maxQueue = opts.maxQueue;
    this.module = opts.module;
  }

  /** Starts `size` workers and waits until they are ready; null (with a warning) when they cannot start. */
  static async start(opts: { size: number; logger: Logger; maxQueue?: number; module?: string; bootTimeoutMs?: number }): Promise<PredictWorkerPool | null> {
    const pool = new PredictWorkerPool({ logger: opts.logger, maxQueue: opts.maxQueue ?? 32, module: opts.module ?? PREDICT_WORKER_MODULE });
    try {
      for (let i = 0; i < opts.size; i++) pool.slots.push({ worker: await pool.spawn(opts.bootTimeoutMs ?? 10_000), job: null });
      return pool;
    } catch (err) {
      opts.logger.warn({ err }, 'prediction workers could not start; large batches will run on the main thread');
      await pool.stop();
      return null;
    }
  }

  run(modelId: string, inputs: readonly unknown[]): Promise<PredictionOutput[]> {
    if (this.stopping) return Promise.reject(new AppError('unavailable', 'the service is shutting down', { headers: { 'Retry-After': '1' } }));
    if (this.queue.length >= this.maxQueue) {
      return Promise.reject(new AppError('unavailable', 'too many large prediction batches are running; retry shortly', { headers: { 'Retry-After': '1' } }));
    }
    return new Promise((resolve, reject) => {
      this.queue.push({ id: this.nextId++, modelId, inputs, resolve, reject });
      this.dispatch();
    });
  }

  async stop(): Promise<void> {
    this.stopping = true;
    for (const job of this.queue.splice(0)) job.reject(new AppError('unavailable', 'the service is shutting down'));
    await Promise.all(this.slots.map((s) => s.worker.terminate()));
    this.slots.length = 0;
  }

  private dispatch(): void {
    for (const slot of this.slots) {
      if (slot.job || !this.queue.length) continue;
      const job = this.queue.shift()!;
      slot.job = job;
      slot.worker.postMessage({ id: job.id, modelId: job.modelId, inputs: job.inputs });
    }
  }

  private spawn(bootTimeoutMs: number): Promise<Worker> {
    // An eval'd worker runs as CommonJS, so it can report a failed import through `require`.
    const code =
      `import(${JSON.stringify(this.module)}).catch((err) => ` +
      `require('node:worker_threads').parentPort.postMessage({ bootError: String((err && err.message) || err) }));`;
    const worker = new Worker(code, { eval: true });
    return new Promise((resolve, reject) => {
      const fail = (err: Error) => {
        clearTimeout(timer);
        worker.off('exit', onExit);
        void worker.terminate();
        reject(err);
      };
      const timer = setTimeout(() => fail(new Error('a prediction worker did not start in time')), bootTimeoutMs);
      const onExit = (code: number) => fail(new Error(`a prediction worker exited with code ${code} while starting`));
      worker.once('exit', onExit);
      worker.once('message', (msg: { ready?: boolean; bootError?: string }) => {
        if (!msg.ready) return fail(new Error(`a prediction worker could not load ${this.module}: ${msg.bootError ?? 'unknown error'}`));
        clearTimeout(timer);
        worker.off('exit', onExit);
        this.attach(worker);
        resolve(worker);
      });
    });
  }

  private attach(worker: Worker): void {
    worker.on('message', (reply: WorkerResponse) => {
      const slot = this.slots.find((s) => s.worker === worker);
      const job = slot?.job;
      if (!slot || !job || job.id !== reply.id) return;
      slot.job = null;
      this.completed++;
      if (reply.ok) job.resolve(reply.outputs);
      else job.reject(new Error(`prediction worker: ${reply.error}`));
      this.dispatch();
    });
    worker.on('error', (err) => this.logger.error({ err }, 'prediction worker failed'));
    worker.on('exit', (code) => {
      const index = this.slots.findIndex((s) => s.worker === worker);
      if (index < 0 || this.stopping) return;
      const [slot] = this.slots.splice(index, 1);
      slot?.job?.reject(new Error(`prediction worker exited with code ${code}`));
      this.logger.warn({ code }, 'prediction worker exited; starting another');
      this.spawn(10_000).then(
        (w) => {
          if (this.stopping) return void w.terminate();
          this.slots.push({ worker: w, job: null });
          this.dispatch();
        },
        (err) => this.logger.error({ err }, 'could not replace a prediction worker'),
      );
    });
  }
}
