/**
 * Runs an asynchronous pass (an outbox relay's publish, a claim query) at most once at a time.
 *
 * - `request()` starts a pass now, or, while one runs, exactly one more right after it: any number of
 *   requests during a pass fold into that one.
 * - A pass that throws is reported to `onError`; with `retryMs` set, the next pass runs that long after the
 *   failure and requests until then wait for it, so a dependency that is down is not asked again at every
 *   request. Without it, the next request runs it.
 * - `flush()` waits for the pass that runs, then runs one more and resolves (or rejects) with it, even after
 *   `stop()` (shutdown and tests use it to drain).
 * - `stop()` starts no more passes and resolves once the running one has ended.
 */
export class SerialPass {
  private readonly pass: () => Promise<void>;
  private readonly onError: (err: unknown) => void;
  private readonly retryMs: number | undefined;
  private running: Promise<void> | null = null;
  private again = false;
  private retryTimer: NodeJS.Timeout | null = null;
  private stopped = false;

  constructor(opts: { pass: () => Promise<void>; onError: (err: unknown) => void; retryMs?: number }) {
    this.pass = opts.pass;
    this.onError = opts.onError;
    this.retryMs = opts.retryMs;
  }

  request(): void {
    if (this.stopped || this.retryTimer) return;
    if (this.running) {
      this.again = true;
      return;
    }
    let failed = false;
    this.running = this.pass()
      .catch((err: unknown) => {
        failed = true;
        this.onError(err);
      })
      .finally(() => {
        this.running = null;
        if (failed && this.retryMs !== undefined) return this.retryLater(this.retryMs);
        this.requestAgain();
      });
  }

  async flush(): Promise<void> {
    while (this.running) await this.running;
    const pass = this.pass();
    // Held as the running pass, so requests meanwhile wait for it instead of running beside it.
    this.running = pass.then(
      () => {},
      () => {},
    );
    try {
      await pass;
    } finally {
      this.running = null;
      this.requestAgain();
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    while (this.running) await this.running;
  }

  private requestAgain(): void {
    if (!this.again) return;
    this.again = false;
    this.request();
  }

  private retryLater(ms: number): void {
    this.again = false;
    if (this.stopped) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      this.request();
    }, ms);
    this.retryTimer.unref();
  }
}
