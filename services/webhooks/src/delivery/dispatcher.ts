import { randomUUID } from 'node:crypto';
import { makeEvent } from '@dap/contracts';
import type { Logger } from '@dap/logger';
import type { SecretBox } from '../domain/secret.ts';
import type { DeliveryDoc, DeliveryRepository, DeliveryStatus } from '../persistence/delivery.repository.ts';
import type { EndpointDoc, EndpointRepository } from '../persistence/endpoint.repository.ts';
import type { AttemptResult, HttpSender } from './http-sender.ts';
import { nextDelayMs } from './retry-schedule.ts';
import { signedHeaders } from './signing.ts';

export interface DispatcherOptions {
  deliveries: DeliveryRepository;
  endpoints: EndpointRepository;
  sender: Pick<HttpSender, 'send'>;
  secrets: SecretBox;
  logger: Logger;
  retryScheduleMs: readonly number[];
  pollMs: number;
  endpointConcurrency: number;
  maxInFlight: number;
  disableAfterMs: number;
  /** How long a claim lasts; longer than any attempt, so only a crashed owner's claim expires. */
  leaseMs: number;
  userAgent: string;
}

/** Retry timers shorter than this are kept in-process, so compressed schedules are honoured closely. */
const MAX_LOCAL_TIMER_MS = 60_000;

/**
 * Sends due deliveries. Every attempt runs under a claim in MongoDB (`lockedUntil`/`lockedBy`), so two
 * instances never send the same attempt at once, and everything about a delivery's future is stored, so a
 * restart loses nothing. Slots are counted per endpoint: a slow endpoint fills only its own slots and is
 * skipped by the claim query while full, so others keep flowing.
 */
export class Dispatcher {
  readonly owner = `dsp_${randomUUID()}`;
  private readonly o: DispatcherOptions;
  private readonly perEndpoint = new Map<string, number>();
  private inFlight = 0;
  private readonly active = new Set<Promise<void>>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly abort = new AbortController();
  private pollTimer: NodeJS.Timeout | null = null;
  private pass: Promise<void> | null = null;
  private passAgain = false;
  private stopped = true;
  /** Something due may have been left unclaimed for want of a slot: look again when a slot frees. */
  private backlog = false;

  constructor(opts: DispatcherOptions) {
    this.o = opts;
  }

  start(): void {
    this.stopped = false;
    const tick = () => {
      this.kick();
      if (!this.stopped) this.pollTimer = setTimeout(tick, this.o.pollMs);
    };
    tick();
  }

  leaseUntil(): Date {
    return new Date(Date.now() + this.o.leaseMs);
  }

  /** Takes a slot for an endpoint if one is free; the caller then inserts the delivery already claimed. */
  tryReserve(endpointId: string): boolean {
    if (this.stopped) return false;
    const n = this.perEndpoint.get(endpointId) ?? 0;
    if (this.inFlight >= this.o.maxInFlight || n >= this.o.endpointConcurrency) {
      this.backlog = true;
      return false;
    }
    this.perEndpoint.set(endpointId, n + 1);
    this.inFlight++;
    return true;
  }

  release(endpointId: string): void {
    const n = (this.perEndpoint.get(endpointId) ?? 1) - 1;
    if (n <= 0) this.perEndpoint.delete(endpointId);
    else this.perEndpoint.set(endpointId, n);
    this.inFlight--;
  }

  /** Sends a delivery this instance inserted already claimed, with the endpoint it already loaded. */
  dispatchClaimed(delivery: DeliveryDoc, endpoint: EndpointDoc): void {
    this.track(this.attempt(delivery, endpoint));
  }

  /** Runs a claim pass now (or right after the current one). */
  kick(): void {
    if (this.stopped) return;
    if (this.pass) {
      this.passAgain = true;
      return;
    }
    this.pass = this.claimLoop()
      .catch((err) => this.o.logger.warn({ err }, 'delivery claim pass failed; will retry'))
      .finally(() => {
        this.pass = null;
        if (this.passAgain) {
          this.passAgain = false;
          this.kick();
        }
      });
  }

  /** Stops claiming, cuts in-flight attempts short and gives their claims back. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.pollTimer) clearTimeout(this.pollTimer);
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    this.abort.abort();
    await this.pass;
    await Promise.allSettled([...this.active]);
  }

  private track(p: Promise<void>): void {
    this.active.add(p);
    void p.finally(() => this.active.delete(p));
  }

  private async claimLoop(): Promise<void> {
    while (!this.stopped) {
      if (this.inFlight >= this.o.maxInFlight) {
        this.backlog = true;
        return;
      }
      const full = [...this.perEndpoint].filter(([, n]) => n >= this.o.endpointConcurrency).map(([id]) => id);
      if (full.length) this.backlog = true;
      const now = new Date();
      const d = await this.o.deliveries.claimDue(now, this.leaseUntil(), this.owner, full);
      if (!d) return;
      // Count the slot now, so the next claim in this loop already sees it.
      this.perEndpoint.set(d.endpointId, (this.perEndpoint.get(d.endpointId) ?? 0) + 1);
      this.inFlight++;
      this.track(this.attempt(d, null));
    }
  }

  private async attempt(d: DeliveryDoc, known: EndpointDoc | null): Promise<void> {
    let freedEarly = false;
    try {
      const endpoint = known ?? (await this.o.endpoints.findById(d.accountId, d.endpointId));
      if (!endpoint || endpoint.status !== 'enabled') {
        await this.o.deliveries.cancel(d._id, this.owner);
        return;
      }
      const secret = this.o.secrets.open(endpoint.secretSealed, endpoint._id);
      const headers: Record<string, string> = {
        ...signedHeaders(secret, d.eventId, Math.floor(Date.now() / 1000), d.body),
        'content-type': 'application/json',
        'user-agent': this.o.userAgent,
        ...(d.requestId ? { 'x-request-id': d.requestId } : {}),
      };
      const at = new Date();
      const result = await this.o.sender.send(endpoint.url, headers, d.body, this.abort.signal);
      if (result.aborted) {
        await this.o.deliveries.release(d._id, this.owner);
        return;
      }
      // The endpoint's slot is free as soon as it has answered; bookkeeping need not hold it.
      this.release(d.endpointId);
      freedEarly = true;
      await this.record(d, endpoint, at, result);
    } catch (err) {
      // The claim expires and another pass retries; nothing is lost.
      this.o.logger.error({ err, deliveryId: d._id, endpointId: d.endpointId }, 'delivery attempt failed unexpectedly');
    } finally {
      if (!freedEarly) this.release(d.endpointId);
      if (this.backlog && !this.stopped) {
        this.backlog = false;
        this.kick();
      }
    }
  }

  private async record(d: DeliveryDoc, endpoint: EndpointDoc, at: Date, result: AttemptResult): Promise<void> {
    const attempt = { at, statusCode: result.statusCode, latencyMs: result.latencyMs, error: result.error };
    const made = d.attempts.length + 1;
    let status: DeliveryStatus = 'succeeded';
    let nextAttemptAt: Date | null = null;
    if (!result.ok) {
      const delay = result.statusCode === 410 ? null : nextDelayMs(this.o.retryScheduleMs, made);
      status = delay === null ? 'failed' : 'pending';
      if (delay !== null) nextAttemptAt = new Date(Date.now() + delay);
    }
    const recorded = await this.o.deliveries.recordAttempt(d._id, this.owner, attempt, { status, nextAttemptAt });
    if (recorded && nextAttemptAt) this.wakeAt(nextAttemptAt.getTime() - Date.now());
    this.o.logger.debug({ deliveryId: d._id, endpointId: endpoint._id, statusCode: result.statusCode, attempt: made, status }, 'delivery attempt');
    if (result.ok) {
      if (endpoint.failingSince) await this.o.endpoints.markHealthy(d.accountId, endpoint._id);
      return;
    }
    if (result.statusCode === 410) {
      await this.disable(endpoint, 'the endpoint answered 410 Gone');
      return;
    }
    const since = await this.o.endpoints.markFailing(d.accountId, endpoint._id, at);
    if (since && Date.now() - since.getTime() >= this.o.disableAfterMs) {
      const cutoff = new Date(Date.now() - this.o.disableAfterMs);
      await this.disable(endpoint, `every attempt failed for ${humanDuration(this.o.disableAfterMs)}`, { failingSince: { $lte: cutoff } });
    }
  }

  private async disable(endpoint: EndpointDoc, reason: string, where: Record<string, unknown> = {}): Promise<void> {
    const event = makeEvent('endpoint.disabled', { accountId: endpoint.accountId, subject: endpoint._id, data: { endpointId: endpoint._id, reason } });
    const done = await this.o.endpoints.disable(endpoint.accountId, endpoint._id, reason, event, where);
    if (!done) return;
    this.o.logger.info({ endpointId: endpoint._id, accountId: endpoint.accountId, reason }, 'webhook endpoint disabled');
    await this.o.deliveries.cancelForEndpoint(endpoint.accountId, endpoint._id);
  }

  /** Longer waits are left to the poll, which reads the stored schedule. */
  private wakeAt(delayMs: number): void {
    if (this.stopped || delayMs > MAX_LOCAL_TIMER_MS) return;
    const t = setTimeout(() => {
      this.timers.delete(t);
      this.kick();
    }, Math.max(1, delayMs));
    this.timers.add(t);
  }
}

function humanDuration(ms: number): string {
  const [size, unit] = ms >= 86_400_000 ? [86_400_000, 'day'] : ms >= 3_600_000 ? [3_600_000, 'hour'] : ms >= 60_000 ? [60_000, 'minute'] : [1_000, 'second'];
  const n = Math.round((ms / (size as number)) * 10) / 10;
  return `${n} ${unit}${n === 1 ? '' : 's'}`;
}
