import { makeEvent, type ApiOperation, type DomainEvent, type UsageCaller, type UsageCalls } from '@dap/contracts';
import type { Principal } from '../auth/authenticate.ts';
import type { Logger } from '@dap/logger';

/** How a call ended, as the usage counts split it. */
export type UsageOutcome = 'success' | 'clientErrors' | 'serverErrors' | 'rateLimited';

export function outcomeOf(status: number): UsageOutcome {
  if (status === 429) return 'rateLimited';
  if (status >= 500) return 'serverErrors';
  if (status >= 400) return 'clientErrors';
  return 'success';
}

/** One counted call: whose, through which credential, to which operation, and how it ended. */
export interface UsageCall {
  accountId: string;
  caller: Exclude<UsageCaller, 'other'>;
  keyId?: string;
  keyHint?: string;
  operationId: string;
  status: number;
}

/** A signed-in caller's answered call as a usage count: a session is the dashboard, never one of the keys. */
export function usageCallOf(p: Principal, operation: ApiOperation | null | undefined, status: number): UsageCall {
  const operationId = operation?.operationId ?? 'unknown';
  if (p.kind === 'key' && p.keyId) return { accountId: p.accountId, caller: 'key', keyId: p.keyId, ...(p.keyHint ? { keyHint: p.keyHint } : {}), operationId, status };
  return { accountId: p.accountId, caller: 'dashboard', operationId, status };
}

/** The name of the overflow line (caller and operation) once a flush holds `maxLines` distinct lines. */
export const OVERFLOW = 'other';

type Line = UsageCalls & { accountId: string };

const emptyCounts = () => ({ success: 0, clientErrors: 0, serverErrors: 0, rateLimited: 0 });

/**
 * Counts calls in memory per (account, API key or the dashboard, operation) by outcome, and publishes one
 * `usage.recorded` event per account per flush (analytics keeps per-minute and per-hour buckets from them, and
 * the API keys' totals per day). Counting stays off the request path; a crash loses at most one flush
 * interval of counts, which the usage charts tolerate.
 *
 * Memory is bounded: at most `maxLines` distinct lines per flush. A call that would open a line past the cap
 * is counted on its account's `other` line instead (one per account, so never dropped), which analytics shows
 * as its own group.
 */
export class UsageRecorder {
  private lines = new Map<string, Line>();
  private windowStart: Date;
  private timer: NodeJS.Timeout | null = null;
  private readonly publish: (events: DomainEvent[]) => Promise<void>;
  private readonly logger: Logger;
  private readonly intervalMs: number;
  private readonly maxLines: number;
  private readonly now: () => Date;
  private readonly onOverflow: () => void;
  /** Calls folded into an `other` line since start (a sign the cap is too low for the traffic). */
  overflowed = 0;

  constructor(opts: {
    publish: (events: DomainEvent[]) => Promise<void>;
    logger: Logger;
    intervalMs: number;
    maxLines: number;
    now?: () => Date;
    /** Told of each call counted on an `other` line (a metric: the cap is too low for the traffic). */
    onOverflow?: () => void;
  }) {
    this.publish = opts.publish;
    this.logger = opts.logger;
    this.intervalMs = opts.intervalMs;
    this.maxLines = opts.maxLines;
    this.now = opts.now ?? (() => new Date());
    this.onOverflow = opts.onOverflow ?? (() => undefined);
    this.windowStart = this.now();
  }

  /** Distinct lines held now (at most `maxLines`, plus one `other` line per account past the cap). */
  get size(): number {
    return this.lines.size;
  }

  record(call: UsageCall): void {
    const id = `${call.accountId}\u0000${call.caller}\u0000${call.keyId ?? ''}\u0000${call.operationId}`;
    let line = this.lines.get(id);
    if (!line) {
      if (this.lines.size >= this.maxLines) return this.recordOverflow(call);
      line = {
        accountId: call.accountId,
        caller: call.caller,
        ...(call.keyId ? { keyId: call.keyId } : {}),
        ...(call.keyHint ? { keyHint: call.keyHint } : {}),
        operationId: call.operationId,
        ...emptyCounts(),
      };
      this.lines.set(id, line);
    }
    line[outcomeOf(call.status)]++;
  }

  private recordOverflow(call: UsageCall): void {
    this.overflowed++;
    this.onOverflow();
    const id = `${call.accountId}\u0000${OVERFLOW}`;
    let line = this.lines.get(id);
    if (!line) {
      line = { accountId: call.accountId, caller: OVERFLOW, operationId: OVERFLOW, ...emptyCounts() };
      this.lines.set(id, line);
    }
    line[outcomeOf(call.status)]++;
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
    if (!this.lines.size) return;
    const lines = this.lines;
    const windowStart = this.windowStart.toISOString();
    const end = this.now();
    this.lines = new Map();
    this.windowStart = end;
    const byAccount = new Map<string, UsageCalls[]>();
    for (const { accountId, ...calls } of lines.values()) {
      const list = byAccount.get(accountId) ?? [];
      list.push(calls);
      byAccount.set(accountId, list);
    }
    const events = [...byAccount].map(([accountId, calls]) => {
      // The per-day totals count the API keys' calls: the dashboard's own are not the customer's API traffic.
      const keyCalls = calls.filter((c) => c.caller === 'key');
      const requests = keyCalls.reduce((n, c) => n + c.success + c.clientErrors + c.serverErrors + c.rateLimited, 0);
      const rejected = keyCalls.reduce((n, c) => n + c.rateLimited, 0);
      return makeEvent('usage.recorded', { accountId, subject: accountId, data: { windowStart, windowEnd: end.toISOString(), requests, rejected, calls } });
    });
    try {
      await this.publish(events);
    } catch (err) {
      this.logger.warn({ err: (err as Error).message, accounts: events.length }, 'usage events not published; counts kept for the next flush');
      for (const [id, line] of lines) this.merge(id, line);
    }
  }

  /** Puts back the counts of a failed publish; past the cap they go to the account's `other` line. */
  private merge(id: string, line: Line): void {
    if (!this.lines.has(id) && this.lines.size >= this.maxLines && line.caller !== OVERFLOW) {
      id = `${line.accountId}\u0000${OVERFLOW}`;
      if (!this.lines.has(id)) this.lines.set(id, { accountId: line.accountId, caller: OVERFLOW, operationId: OVERFLOW, ...emptyCounts() });
    }
    const into = this.lines.get(id);
    if (!into) return void this.lines.set(id, line);
    for (const k of Object.keys(emptyCounts()) as UsageOutcome[]) into[k] += line[k];
  }
}
