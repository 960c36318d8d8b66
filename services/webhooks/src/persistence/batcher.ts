/**
 * Coalesces calls into batches: while one batch is being written, new calls queue up and go together in the
 * next. An idle caller waits no longer than one microtask, so batching costs latency only under load, which
 * is when it pays (one round trip for many writes).
 */
export class Batcher<T, R> {
  private readonly run: (items: T[]) => Promise<R[]>;
  private readonly maxBatch: number;
  private queue: Array<{ item: T; resolve: (r: R) => void; reject: (err: unknown) => void }> = [];
  private running = false;

  /** `run` answers one result per item, in order; if it throws, every item of that batch fails with it. */
  constructor(run: (items: T[]) => Promise<R[]>, maxBatch = 500) {
    this.run = run;
    this.maxBatch = maxBatch;
  }

  add(item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      if (!this.running) {
        this.running = true;
        queueMicrotask(() => void this.flush());
      }
    });
  }

  private async flush(): Promise<void> {
    while (this.queue.length) {
      const batch = this.queue.splice(0, this.maxBatch);
      try {
        const results = await this.run(batch.map((b) => b.item));
        batch.forEach((b, i) => b.resolve(results[i] as R));
      } catch (err) {
        for (const b of batch) b.reject(err);
      }
    }
    this.running = false;
  }
}
