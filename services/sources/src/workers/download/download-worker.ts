import { Worker } from 'node:worker_threads';
import type { Logger } from '@dap/logger';
import { ConnectorCheckError } from '../../domain/connectors/connector.ts';
import type { DownloadJob, DownloadResult } from '../../domain/connectors/url-download.ts';

/** Runs URL downloads (see `downloadToFile`); the URL connector uses one when the service gives it one. */
export interface DownloadRunner {
  run(job: DownloadJob, signal: AbortSignal): Promise<DownloadResult>;
}

/** A download's failure as it crosses the thread boundary: enough to rebuild the error the connector expects. */
export interface DownloadFailure {
  name: string;
  message: string;
  code?: string;
  /** Set for a ConnectorCheckError: the body field at fault. */
  field?: string;
  /** Set for a ConnectorCheckError that refused the address. */
  refusedTarget?: boolean;
}

export type WorkerRequest = { id: number; job: DownloadJob } | { cancel: number };
export type WorkerReply = { id: number; result: DownloadResult } | { id: number; failure: DownloadFailure };

export function toFailure(err: unknown): DownloadFailure {
  const e = err instanceof Error ? err : new Error(String(err));
  const code = (e as { code?: unknown }).code;
  return {
    name: e.name,
    message: e.message,
    ...(typeof code === 'string' ? { code } : {}),
    ...(e instanceof ConnectorCheckError ? { field: e.field, refusedTarget: e.targetRefused } : {}),
  };
}

export function fromFailure(f: DownloadFailure): Error {
  if (f.field !== undefined) return new ConnectorCheckError(f.field, f.message, { targetRefused: f.refusedTarget === true });
  return Object.assign(new Error(f.message), { name: f.name, ...(f.code ? { code: f.code } : {}) });
}

/** The package export that the worker thread imports (package.json `exports`), resolved from the working directory. */
export const DOWNLOAD_WORKER_MODULE = '@dap/sources/download-worker';
const BOOT_TIMEOUT_MS = 15_000;
const CANCEL_GRACE_MS = 5_000;

interface Pending {
  resolve: (r: DownloadResult) => void;
  reject: (err: Error) => void;
}

/**
 * One worker thread that runs every URL download of the process. A download's body passes through
 * hundreds of buffers (read slabs, undici's and zlib's pieces); in a thread of its own, with a heap of a few MB, collecting them costs a
 * fraction of what it costs on the service's main heap (measured: about half the CPU of the whole pull
 * for a 60 MB file), and the main event loop only sees the start and the end. Started on first use;
 * a worker that dies fails the downloads it was running and is started again by the next one.
 */
export class DownloadWorker implements DownloadRunner {
  private readonly logger: Logger;
  private readonly module: string;
  private worker: Promise<Worker> | null = null;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private stopped = false;

  constructor(opts: { logger: Logger; module?: string }) {
    this.logger = opts.logger;
    this.module = opts.module ?? DOWNLOAD_WORKER_MODULE;
  }

  async run(job: DownloadJob, signal: AbortSignal): Promise<DownloadResult> {
    signal.throwIfAborted();
    if (this.stopped) throw new Error('the download worker is stopped');
    const worker = await this.start();
    const id = this.nextId++;
    return new Promise<DownloadResult>((resolve, reject) => {
      // The worker answers a cancel with the download's failure once its file is closed; if it cannot
      // (stuck), the caller is not kept waiting past a grace period.
      let grace: NodeJS.Timeout | null = null;
      const onAbort = () => {
        worker.postMessage({ cancel: id } satisfies WorkerRequest);
        grace = setTimeout(() => this.pending.get(id)?.reject(signal.reason instanceof Error ? signal.reason : new Error('the download was cancelled')), CANCEL_GRACE_MS);
      };
      const done = () => {
        if (grace) clearTimeout(grace);
        signal.removeEventListener('abort', onAbort);
        this.pending.delete(id);
      };
      this.pending.set(id, {
        resolve: (r) => (done(), resolve(r)),
        reject: (e) => (done(), reject(e)),
      });
      signal.addEventListener('abort', onAbort, { once: true });
      worker.postMessage({ id, job } satisfies WorkerRequest);
    });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    const worker = this.worker;
    this.worker = null;
    this.failAll(new Error('the service is shutting down'));
    if (worker) await (await worker.catch(() => null))?.terminate();
  }

  private start(): Promise<Worker> {
    this.worker ??= this.spawn().catch((err: Error) => {
      this.worker = null;
      throw err;
    });
    return this.worker;
  }

  private spawn(): Promise<Worker> {
    // An eval'd worker runs as CommonJS, so it can report a failed import through `require`.
    const code =
      `import(${JSON.stringify(this.module)}).catch((err) => ` + `require('node:worker_threads').parentPort.postMessage({ bootError: String((err && err.message) || err) }));`;
    const worker = new Worker(code, { eval: true });
    worker.unref();
    return new Promise((resolve, reject) => {
      const fail = (err: Error) => {
        clearTimeout(timer);
        void worker.terminate();
        reject(err);
      };
      const timer = setTimeout(() => fail(new Error('the download worker did not start in time')), BOOT_TIMEOUT_MS);
      worker.once('message', (msg: { ready?: boolean; bootError?: string }) => {
        if (!msg.ready) return fail(new Error(`the download worker could not load ${this.module}: ${msg.bootError ?? 'unknown error'}`));
        clearTimeout(timer);
        worker.on('message', (reply: WorkerReply) => {
          const job = this.pending.get(reply.id);
          if (!job) return;
          if ('result' in reply) job.resolve({ ...reply.result, head: Buffer.from(reply.result.head.buffer, reply.result.head.byteOffset, reply.result.head.byteLength) });
          else job.reject(fromFailure(reply.failure));
        });
        resolve(worker);
      });
      const lost = (why: string) => {
        clearTimeout(timer);
        if (this.stopped) return;
        this.logger.error({ why }, 'the download worker stopped; its downloads fail and the next one starts a new worker');
        this.worker = null;
        this.failAll(new Error('the download worker stopped unexpectedly'));
        reject(new Error(`the download worker stopped: ${why}`));
      };
      worker.once('error', (err) => lost(err.message));
      worker.once('exit', (code) => lost(`exit code ${code}`));
    });
  }

  private failAll(err: Error): void {
    for (const job of [...this.pending.values()]) job.reject(err);
  }
}
