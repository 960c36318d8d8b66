import { makeEvent, type DomainEvent } from '@dap/contracts';
import type { Logger } from '@dap/logger';

/**
 * Counts requests per account in memory and publishes one `usage.recorded` event per account per flush
 * (the analytics service turns them into requests per day). Counting stays off the request path; a crash
 * loses at most one flush interval of counts, which the usage chart tolerates.
 */
export class UsageRecorder {
  private counts = new Map<string, { requests: number; rejected: number }>();
  private windowStart = new Date();
  private timer: NodeJS.Timeout | null = null;
  private readonly publish: (events: DomainEvent[]) => Promise<void>;
  private readonly logger: Logger;
  private readonly intervalMs: number;

  constructor(opts: { publish: (events: DomainEvent[]) => Promise<void>; logger: Logger; intervalMs: number }) {
    this.publish = opts.publish;
    this.logger = opts.logger;
    this.intervalMs = opts.intervalMs;
  }

  record(accountId: string, rejected: boolean): void {
    const c = this.counts.get(accountId) ?? { requests: 0, rejected: 0 };
    c.requests++;
    if (rejected) c.rejected++;
    this.counts.set(accountId, c);
  }

  start(): void {
    this.timer = setInterval(() => void this.flush(), this.intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.flush();
  }

  async flush(): Promise<void> {
    if (!this.counts.size) return;
    const counts = this.counts;
    const windowStart = this.windowStart.toISOString();
    const windowEnd = new Date().toISOString();
    this.counts = new Map();
    this.windowStart = new Date();
    const events = [...counts].map(([accountId, c]) =>
      makeEvent('usage.recorded', { accountId, subject: accountId, data: { windowStart, windowEnd, requests: c.requests, rejected: c.rejected } }),
    );
    try {
      await this.publish(events);
    } catch (err) {
      this.logger.warn({ err: (err as Error).message, accounts: events.length }, 'usage events not published; counts kept for the next flush');
      for (const [accountId, c] of counts) {
        const now = this.counts.get(accountId) ?? { requests: 0, rejected: 0 };
        this.counts.set(accountId, { requests: now.requests + c.requests, rejected: now.rejected + c.rejected });
      }
    }
  }
}
