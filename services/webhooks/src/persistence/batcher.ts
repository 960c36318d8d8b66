export interface BatcherOptions {
  /** Items per batch at most (default 500). */
  maxBatch?: number;
  /**
   * How long the oldest waiting item may wait for others before its batch goes (default 0: at the next
   * microtask). A full batch goes at once either way.
   */
  lingerMs?: number;
}

interface Waiting<T, R> {
  item: T;
  at: number;
  resolve: (r: R) => void;
  reject: (err: unknown) => void;
}

/**
 * Coalesces calls into batches: while one batch is being written, new calls queue up and go together in the
 * next. Without a linger an idle caller waits no longer than one microtask, so batching costs latency only
 * under load, which is when it pays (one round trip for many writes). With one, a batch also waits up to
 * `lingerMs` for its oldest item, for writes nobody waits on (each round trip is a socket write and a read
 * on both sides, which on a small machine cost more than the write's own work).
 */
export class Batcher<T, R> {
  private readonly run: (items: T[]) => Promise<R[]>;
  private readonly maxBatch: number;
  private readonly lingerMs: number;
  private queue: Array<Waiting<T, R>> = [];
  private running = false;
  private timer: NodeJS.Timeout | null = null;

  /** `run` answers one result per item, in order; if it throws, every item of that batch fails with it. */
  constructor(run: (items: T[]) => Promise<R[]>, opts: BatcherOptions = {}) {
    this.run = run;
    this.maxBatch = opts.maxBatch ?? 500;
    this.lingerMs = opts.lingerMs ?? 0;
  }

  add(item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.queue.push({ item, at: performance.now(), resolve, reject });
      this.schedule();
    });
  }

  /** Starts a flush now if a batch is ready, or arms the timer for the oldest item; a running flush picks new items up itself. */
  private schedule(): void {
    if (this.running || !this.queue.length) return;
    const wait = this.queue.length >= this.maxBatch ? 0 : this.queue[0]!.at + this.lingerMs - performance.now();
    if (wait <= 0) {
      if (this.timer) clearTimeout(this.timer);
      this.timer = null;
      this.running = true;
      queueMicrotask(() => void this.flush());
    } else if (!this.timer) {
      this.timer = setTimeout(() => {
        this.timer = null;
        this.schedule();
      }, wait);
    }
  }

  private async flush(): Promise<void> {
    do {
      const batch = this.queue.splice(0, this.maxBatch);
      try {
        const results = await this.run(batch.map((b) => b.item));
        batch.forEach((b, i) => b.resolve(results[i] as R));
      } catch (err) {
        for (const b of batch) b.reject(err);
      }
      // What came in meanwhile goes next, once full or old enough (at once without a linger).
    } while (this.queue.length && (this.queue.length >= this.maxBatch || this.queue[0]!.at + this.lingerMs <= performance.now()));
    this.running = false;
    this.schedule();
  }
}
