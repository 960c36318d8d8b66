import type { Logger } from '@dap/logger';

type Job = () => Promise<void>;

/**
 * Runs keyed jobs in-process, at most `concurrency` at once. A key already queued is not queued twice; a key
 * enqueued while it runs runs once more afterwards, so a request made mid-run is never lost.
 */
export class JobRunner {
  private readonly concurrency: number;
  private readonly logger: Logger;
  private readonly queue: { key: string; job: Job }[] = [];
  private readonly queued = new Set<string>();
  private readonly running = new Map<string, Promise<void>>();
  private readonly again = new Map<string, Job>();
  private stopped = false;

  constructor(opts: { concurrency: number; logger: Logger }) {
    this.concurrency = opts.concurrency;
    this.logger = opts.logger;
  }

  /** Returns false when the job was not accepted (stopped, or this runner runs nothing). */
  enqueue(key: string, job: Job): boolean {
    if (this.stopped || this.concurrency === 0) return false;
    if (this.running.has(key)) {
      this.again.set(key, job);
      return true;
    }
    if (this.queued.has(key)) return true;
    this.queued.add(key);
    this.queue.push({ key, job });
    this.pump();
    return true;
  }

  get activeCount(): number {
    return this.running.size;
  }

  get queuedCount(): number {
    return this.queue.length;
  }

  /** Takes no new jobs, drops the queue (its work is still pending in the database) and waits for running jobs. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.queue.length = 0;
    this.queued.clear();
    this.again.clear();
    while (this.running.size) await Promise.allSettled([...this.running.values()]);
  }

  private pump(): void {
    while (!this.stopped && this.running.size < this.concurrency && this.queue.length) {
      const { key, job } = this.queue.shift()!;
      this.queued.delete(key);
      const run = Promise.resolve()
        .then(job)
        .catch((err: unknown) => this.logger.error({ err, job: key }, 'job failed'))
        .finally(() => {
          this.running.delete(key);
          const next = this.again.get(key);
          this.again.delete(key);
          if (next) this.enqueue(key, next);
          this.pump();
        });
      this.running.set(key, run);
    }
  }
}
