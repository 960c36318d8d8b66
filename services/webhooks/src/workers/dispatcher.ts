import { randomUUID, type KeyObject } from 'node:crypto';
import Denque from 'denque';
import { makeEvent, type DomainEvent } from '@dap/contracts';
import type { Logger } from '@dap/logger';
import { SerialPass } from '@dap/mongo';
import { carrierOf, context, contextOf, endSpan, SpanKind, startSpan, trace, tracingEnabled, withAccount, type Context, type Span } from '@dap/tracing';
import type { SecretBox } from '../domain/secret.ts';
import { seriesAttempts, type AttemptDoc, type DeliveryDoc, type DeliveryRepository, type DeliveryStatus } from '../persistence/delivery.repository.ts';
import type { EndpointDoc, EndpointRepository } from '../persistence/endpoint.repository.ts';
import type { AttemptResult, HttpSender } from './http-sender.ts';
import { nextDelayMs, retryDelayWithPushback } from '../domain/retry-schedule.ts';
import type { RateSlots } from '../persistence/rate-slots.ts';
import { signedHeaders, signingKeyOf } from '../domain/signing.ts';

export interface DispatcherOptions {
  deliveries: Pick<
    DeliveryRepository,
    | 'claimDue'
    | 'releaseInstanceClaims'
    | 'renewClaim'
    | 'releaseOwner'
    | 'recordAttempt'
    | 'cancel'
    | 'release'
    | 'cancelForEndpoint'
    | 'postpone'
    | 'earlierPending'
    | 'releaseSuccessors'
    | 'recordFirstAttempt'
    | 'insertMany'
  >;
  endpoints: Pick<EndpointRepository, 'findById' | 'markHealthy' | 'markFailing' | 'disable' | 'pauseUntil'>;
  /** Request slots of endpoints with a rate limit, shared by every instance. */
  rateSlots: Pick<RateSlots, 'take'>;
  /** A receiver's Retry-After holds its endpoint at most this long. */
  maxRetryAfterMs: number;
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
  /** Stable across restarts of this instance (its claims are taken back at start-up). */
  instanceId: string;
  /** The per-attempt timeout: a queued claim with less than this (plus a margin) left is renewed first. */
  attemptTimeoutMs: number;
  /** The clock of due times, claims, backoff, pauses and secret overlaps; tests move it (see `runDue`). */
  now?: () => number;
}

/** Retry timers shorter than this are kept in-process, so compressed schedules are honoured closely. */
const MAX_LOCAL_TIMER_MS = 60_000;
/** Claimed deliveries held in memory, waiting for a slot (beyond these new ones are left to the claim query). */
const MAX_WAITING = 20_000;
const MAX_WAITING_BYTES = 32 * 1024 * 1024;
/**
 * Attempts answered but not yet recorded: a slot frees as soon as the endpoint answers, so without this cap
 * a database slower than the endpoints would let unrecorded attempts (and their claims) pile up.
 */
const MAX_UNRECORDED = 1_000;
/** A held claim is renewed before its attempt unless it outlasts the attempt by this much. */
const RENEW_MARGIN_MS = 2_000;
/** An endpoint document this recent is used as is; older ones are read again before an attempt. */
const ENDPOINT_FRESH_MS = 1_000;
const MAX_CACHED = 10_000;
/**
 * Deliveries sent before they were stored are stored anyway (claimed, as if they had not been sent first) once
 * their endpoint has left an attempt unanswered this long: a slow endpoint holds the Kafka commit (and what a
 * crash would send again) for no longer. A backlog behind an endpoint that answers is not (storing it twice
 * would slow the very deliveries it waits for), up to SPILL_MAX_AGE_MS.
 */
export const SPILL_AFTER_MS = 2_000;
export const SPILL_MAX_AGE_MS = 30_000;
const SPILL_CHECK_MS = 250;
/** How long a stopping consumer waits for what it took to be stored; what is not by then is consumed again. */
export const UNSTORED_DRAIN_MS = SPILL_AFTER_MS + 1_000;
/** Deliveries stored lately, remembered so that an event this process consumes again is not sent twice. */
const MAX_REMEMBERED = 50_000;
/**
 * An event that occurred before this process was given its partitions (plus this margin for clocks) may have
 * been consumed by another process that sent and stored its deliveries without committing (it crashed, or the
 * partition moved): the fan-out looks those deliveries up before sending them first. Later events cannot have.
 */
export const TAKE_OVER_SKEW_MS = 2_000;

/** What the fan-out does with a new delivery: send it now, hold it claimed in memory, or leave it to the claim query. */
export type Plan = 'send' | 'queue' | 'defer';

/**
 * Whether a new delivery to this endpoint may be sent before it is stored: only where nothing else decides when
 * it goes (an ordered endpoint waits for earlier events, a rate limit for a slot, a Retry-After for its time).
 */
export function sendsFirst(endpoint: EndpointDoc, now = Date.now()): boolean {
  return endpoint.status === 'enabled' && endpoint.ordering !== 'ordered' && !endpoint.rateLimitPerSecond && !((endpoint.pausedUntil?.getTime() ?? 0) > now);
}

/**
 * A delivery sent before anything about it was stored: its event's Kafka offset is its only durable trace until
 * its first attempt is stored with the delivery (`recording`), or the delivery is stored without it (`spilling`:
 * it waited too long). `foreign`: another process had stored it first (its event was consumed twice).
 */
interface Unstored {
  doc: DeliveryDoc;
  since: number;
  /** When its attempt went out (null while it waits for a slot). */
  sentAt: number | null;
  state: 'unstored' | 'recording' | 'spilling' | 'stored' | 'foreign';
  spill: Promise<boolean> | null;
  durable: Promise<void>;
  resolve: () => void;
  reject: (err: Error) => void;
}

/**
 * One endpoint's claimed deliveries, in the order they go: those the claim query found first, then new ones.
 * Double-ended queues (denque, as the MongoDB driver and ioredis use): a backlog holds thousands of deliveries
 * per endpoint, and Array#shift on an array that large copies it whole each time (2 % of the service's CPU
 * in a 20,000-event backlog).
 */
interface EndpointQueue {
  due: Denque<DeliveryDoc>;
  fresh: Denque<DeliveryDoc>;
}

/**
 * Sends due deliveries. Every attempt runs under a claim in MongoDB (`lockedUntil`/`lockedBy`), so two
 * instances never send the same attempt at once, and everything about a delivery's future is stored, so a
 * restart loses nothing. Slots are counted per endpoint: a slow endpoint fills only its own slots, so
 * others keep flowing.
 *
 * A new delivery is inserted already claimed by this instance (the insert is the claim) and sent at once
 * when its endpoint has a slot, or held here until one frees; where only a slot decides when it goes
 * (`sendsFirst`), it is not inserted at all but sent first and stored with its outcome (`sendFirst`), its
 * event's uncommitted Kafka offset standing for it until then. The claim query (`claimLoop`, on a timer and
 * on retry timers) claims what else is due — retries, other instances' leftovers, what did not fit in
 * memory — into the same per-endpoint queues, ahead of new deliveries, so a busy endpoint's retries are not
 * starved. A claim held longer than the lease allows is renewed before its attempt.
 */
export class Dispatcher {
  /** Unique to this process: a claim is recorded only by the process that made it. */
  readonly owner = `dsp_${randomUUID()}`;
  readonly instanceId: string;
  private readonly o: DispatcherOptions;
  private readonly now: () => number;
  private readonly perEndpoint = new Map<string, number>();
  private inFlight = 0;
  private unrecorded = 0;
  private readonly queues = new Map<string, EndpointQueue>();
  private waitingCount = 0;
  private waitingBytes = 0;
  private readonly endpointCache = new Map<string, { doc: EndpointDoc; at: number }>();
  /** HMAC keys by endpoint and sealed secret: opening and importing cost far more than signing. */
  private readonly secretCache = new Map<string, KeyObject>();
  /** Endpoints this process has seen fail, so a success clears the run even if its endpoint document predates it. */
  private readonly failing = new Set<string>();
  private readonly active = new Set<Promise<void>>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly abort = new AbortController();
  private pollTimer: NodeJS.Timeout | null = null;
  /** Claim passes, one at a time; a failed one is retried by the next poll (or retry timer, or kick). */
  private readonly passes: SerialPass;
  private stopped = true;
  /** New deliveries were left to the claim query for want of memory: run it once there is room again. */
  private deferred = false;
  /** Claim passes in a row that found nothing. */
  private idlePolls = 0;
  /** Deliveries sent (or waiting to be sent) before they were stored, oldest first. */
  private readonly unstored = new Map<string, Unstored>();
  /** Ids of deliveries stored lately from `unstored`, oldest first (see MAX_REMEMBERED). */
  private readonly storedLately = new Set<string>();
  /** Queued deliveries that another process stored first: dropped when their turn comes. */
  private readonly foreign = new Set<string>();
  private spillTimer: NodeJS.Timeout | null = null;
  /** When this process was last given partitions (its start until the consumer's group join says). */
  private assignedAt = 0;

  constructor(opts: DispatcherOptions) {
    this.o = opts;
    this.now = opts.now ?? (() => Date.now()); // looked up per call, so jest's fake Date applies
    this.instanceId = opts.instanceId;
    this.passes = new SerialPass({ pass: () => this.claimLoop(), onError: (err) => this.o.logger.warn({ err }, 'delivery claim pass failed; will retry') });
  }

  /** The consumer was given partitions (see TAKE_OVER_SKEW_MS). */
  partitionsAssigned(): void {
    this.assignedAt = this.now();
  }

  /** Whether an event that occurred at this time may be one another process sent and stored (see TAKE_OVER_SKEW_MS). */
  mayHaveBeenTaken(occurredAtMs: number): boolean {
    return occurredAtMs < this.assignedAt + TAKE_OVER_SKEW_MS;
  }

  /** Takes back what an earlier process of this instance left claimed, then claims what is due, now and on a timer. */
  async start(): Promise<void> {
    this.partitionsAssigned();
    const released = await this.o.deliveries.releaseInstanceClaims(this.instanceId, this.owner);
    if (released) this.o.logger.info({ released, instanceId: this.instanceId }, 'resuming deliveries claimed by this instance before a crash');
    this.stopped = false;
    const tick = () => {
      this.kick();
      // Polls that find nothing back off (up to 8 × pollMs): on the local wire-compatible server the claim
      // query is a collection scan. Retries this process scheduled wake it on time regardless.
      if (!this.stopped) this.pollTimer = setTimeout(tick, this.o.pollMs * Math.min(8, 2 ** this.idlePolls));
    };
    tick();
  }

  leaseUntil(): Date {
    return new Date(this.now() + this.o.leaseMs);
  }

  private hasSlot(endpointId: string): boolean {
    return this.inFlight < this.o.maxInFlight && this.unrecorded < MAX_UNRECORDED && (this.perEndpoint.get(endpointId) ?? 0) < this.o.endpointConcurrency;
  }

  private take(endpointId: string): void {
    this.perEndpoint.set(endpointId, (this.perEndpoint.get(endpointId) ?? 0) + 1);
    this.inFlight++;
  }

  private hasRoom(bytes: number): boolean {
    return this.waitingCount < MAX_WAITING && this.waitingBytes + bytes <= MAX_WAITING_BYTES;
  }

  /**
   * Decides for a new delivery: a free slot (and nothing queued before it) is taken now ('send'), else room
   * in memory is reserved ('queue'); either way the caller inserts it claimed. 'defer' means insert it
   * unclaimed for the claim query. A plan whose insert turned out a duplicate is undone with `unplan`.
   */
  plan(endpointId: string, bytes: number): Plan {
    if (this.stopped) return 'defer';
    if (this.hasSlot(endpointId) && !this.queues.has(endpointId)) {
      this.take(endpointId);
      return 'send';
    }
    if (this.hasRoom(bytes)) {
      this.waitingCount++;
      this.waitingBytes += bytes;
      return 'queue';
    }
    this.deferred = true;
    return 'defer';
  }

  unplan(endpointId: string, plan: Plan, bytes: number): void {
    if (plan === 'send') this.release(endpointId);
    else if (plan === 'queue') this.unreserve(bytes);
  }

  private unreserve(bytes: number): void {
    this.waitingCount--;
    this.waitingBytes -= bytes;
    // Memory was full and new deliveries were stored unclaimed: claim them once there is room again.
    if (this.deferred && this.waitingCount < MAX_WAITING / 2) {
      this.deferred = false;
      this.kick();
    }
  }

  /** Gives a slot back and hands it to what waits. */
  release(endpointId: string): void {
    const n = (this.perEndpoint.get(endpointId) ?? 1) - 1;
    if (n <= 0) this.perEndpoint.delete(endpointId);
    else this.perEndpoint.set(endpointId, n);
    const wasFull = this.inFlight >= this.o.maxInFlight;
    this.inFlight--;
    if (this.stopped) return;
    this.pump(endpointId);
    if (wasFull) this.pumpAll();
  }

  /** Sends a delivery this instance inserted already claimed, with the endpoint it has just loaded. */
  dispatchClaimed(delivery: DeliveryDoc, endpoint: EndpointDoc): void {
    this.remember(endpoint);
    this.track(this.attempt(delivery, endpoint));
  }

  /**
   * Takes a new delivery that is not stored (after a 'send' or 'queue' plan, to an endpoint that `sendsFirst`):
   * it goes before any write, and is stored with its first attempt's outcome (or, after SPILL_AFTER_MS, without).
   * Resolves once it is stored; rejects if this process stops first (its event is then consumed again).
   */
  sendFirst(doc: DeliveryDoc, endpoint: EndpointDoc, plan: 'send' | 'queue'): Promise<void> {
    let resolve!: () => void;
    let reject!: (err: Error) => void;
    const durable = new Promise<void>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    durable.catch(() => {}); // the consumer handles it; this keeps a rejection nobody awaits yet from being unhandled
    this.unstored.set(doc._id, { doc, since: this.now(), sentAt: null, state: 'unstored', spill: null, durable, resolve, reject });
    this.armSpill();
    if (plan === 'send') this.dispatchClaimed(doc, endpoint);
    else this.enqueueClaimed(doc, endpoint);
    return durable;
  }

  /**
   * A delivery this process already took, for an event consumed again (a rebalance reads from the last commit):
   * the promise of its storage, resolved already if it was stored lately; null if this process does not know it.
   */
  held(id: string): Promise<void> | null {
    const e = this.unstored.get(id);
    if (e) return e.durable;
    return this.storedLately.has(id) ? Promise.resolve() : null;
  }

  /** Whether this process took the delivery before it was stored and has not stored it yet. */
  sendingUnstored(id: string): boolean {
    return this.unstored.has(id);
  }

  private armSpill(): void {
    if (this.spillTimer || this.stopped || !this.unstored.size) return;
    this.spillTimer = setTimeout(() => {
      this.spillTimer = null;
      const now = this.now();
      // Oldest first: nothing younger than SPILL_AFTER_MS can have been on the wire that long.
      const old: Unstored[] = [];
      for (const e of this.unstored.values()) {
        if (e.since > now - SPILL_AFTER_MS) break;
        if (e.state === 'unstored') old.push(e);
      }
      const slow = new Set(old.filter((e) => e.sentAt !== null && e.sentAt <= now - SPILL_AFTER_MS).map((e) => e.doc.endpointId));
      for (const e of old) {
        if (!slow.has(e.doc.endpointId) && e.since > now - SPILL_MAX_AGE_MS) continue;
        this.spill(e).catch((err: unknown) => this.o.logger.warn({ err, deliveryId: e.doc._id }, 'storing a delivery sent before it was stored failed; will retry'));
      }
      this.armSpill();
    }, SPILL_CHECK_MS);
  }

  /** Stores a delivery taken unstored as the store-first path would have (claimed by this process, no attempt yet). */
  private spill(e: Unstored): Promise<boolean> {
    if (e.state === 'stored' || e.state === 'foreign') return Promise.resolve(e.state === 'stored');
    if (e.spill) return e.spill;
    e.state = 'spilling';
    e.spill = this.o.deliveries.insertMany([e.doc]).then(
      (inserted) => {
        const mine = inserted.has(e.doc._id);
        this.settle(e, mine ? 'stored' : 'foreign');
        return mine;
      },
      (err: unknown) => {
        e.state = 'unstored';
        e.spill = null;
        throw err;
      },
    );
    return e.spill;
  }

  private settle(e: Unstored, state: 'stored' | 'foreign'): void {
    e.state = state;
    this.unstored.delete(e.doc._id);
    if (state === 'foreign') this.foreign.add(e.doc._id);
    this.storedLately.add(e.doc._id);
    if (this.storedLately.size > MAX_REMEMBERED) this.storedLately.delete(this.storedLately.values().next().value!);
    e.resolve();
  }

  /** Holds a delivery this instance inserted claimed (after a 'queue' plan) until its endpoint has a slot. */
  enqueueClaimed(delivery: DeliveryDoc, endpoint: EndpointDoc): void {
    this.remember(endpoint);
    this.queueOf(endpoint._id).fresh.push(delivery);
    this.pump(endpoint._id);
  }

  /** Drops what this process knows about an endpoint (its secret was rotated, or it was deleted). */
  forgetEndpoint(endpointId: string): void {
    this.endpointCache.delete(endpointId);
  }

  private queueOf(endpointId: string): EndpointQueue {
    let q = this.queues.get(endpointId);
    if (!q) this.queues.set(endpointId, (q = { due: new Denque(), fresh: new Denque() }));
    return q;
  }

  private pumpAll(): void {
    for (const id of [...this.queues.keys()]) this.pump(id);
  }

  private pump(endpointId: string): void {
    const q = this.queues.get(endpointId);
    if (!q) return;
    let claimMore = false;
    while (!this.stopped && (q.due.length || q.fresh.length) && this.hasSlot(endpointId)) {
      claimMore ||= q.due.length > 0;
      const next = (q.due.length ? q.due : q.fresh).shift()!;
      this.unreserve(next.body.length);
      if (this.foreign.delete(next._id)) continue;
      this.take(endpointId);
      // One not stored has no claim to renew (it is stored, claimed, long before its lease would run short).
      const fresh = this.unstored.has(next._id) || next.lockedUntil.getTime() - this.now() > this.o.attemptTimeoutMs + RENEW_MARGIN_MS;
      this.track(fresh ? this.attempt(next, null) : this.renewThenAttempt(next));
    }
    if (!q.due.length && !q.fresh.length) this.queues.delete(endpointId);
    // What the claim query found may be the head of a longer backlog: fetch the next while these go out.
    if (claimMore) this.kick();
  }

  /** A claim held in memory for long: extend it first, unless it lapsed and another owner took the delivery. */
  private async renewThenAttempt(d: DeliveryDoc): Promise<void> {
    let renewed: Date | null = null;
    try {
      renewed = await this.o.deliveries.renewClaim(d._id, this.owner, this.leaseUntil());
    } catch (err) {
      this.o.logger.warn({ err, deliveryId: d._id }, 'renewing a delivery claim failed; the claim lapses and is found again');
    }
    if (!renewed) return this.release(d.endpointId);
    await this.attempt({ ...d, lockedUntil: renewed }, null);
  }

  /** Runs a claim pass now (or right after the current one). */
  kick(): void {
    if (this.stopped) return;
    this.passes.request();
  }

  /**
   * Runs a claim pass now and waits until every attempt under way (those it started included) is recorded:
   * a test that moved the clock (`now`) sends what fell due with it, and then sees what was sent and stored.
   */
  async runDue(): Promise<void> {
    if (this.stopped) return;
    await this.passes.flush();
    while (this.active.size) await Promise.allSettled([...this.active]);
  }

  /** Stops claiming, cuts in-flight attempts short and gives their claims back. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.pollTimer) clearTimeout(this.pollTimer);
    if (this.spillTimer) clearTimeout(this.spillTimer);
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    this.queues.clear();
    this.waitingCount = 0;
    this.waitingBytes = 0;
    this.abort.abort();
    await this.passes.stop();
    await Promise.allSettled([...this.active]);
    // Not stored, and not to be sent from here: their events are consumed again (by the next start or another instance).
    for (const e of this.unstored.values()) if (e.state === 'unstored') e.reject(new Error('the dispatcher stopped before the delivery was stored'));
    this.unstored.clear();
    this.foreign.clear();
    // What was held here is stored: give its claims back so the next start (or another instance) sends it now.
    try {
      await this.o.deliveries.releaseOwner({ id: this.owner, instance: this.instanceId });
    } catch (err) {
      this.o.logger.warn({ err }, 'releasing delivery claims at shutdown failed; they lapse on their own');
    }
  }

  private track(p: Promise<void>): void {
    this.active.add(p);
    void p.finally(() => this.active.delete(p));
  }

  /**
   * Claims due deliveries into the endpoints' queues, ahead of new ones, at most a slot's worth of them
   * per endpoint ahead at a time, so nothing is claimed long before it can be sent.
   */
  private async claimLoop(): Promise<void> {
    while (!this.stopped) {
      if (!this.hasRoom(0)) {
        this.deferred = true;
        return;
      }
      const saturated = [...this.queues].filter(([, q]) => q.due.length >= this.o.endpointConcurrency).map(([id]) => id);
      const d = await this.o.deliveries.claimDue(new Date(this.now()), this.leaseUntil(), { id: this.owner, instance: this.instanceId }, saturated);
      if (!d) {
        this.idlePolls++;
        return;
      }
      this.idlePolls = 0;
      if (this.stopped) return;
      this.waitingCount++;
      this.waitingBytes += d.body.length;
      this.queueOf(d.endpointId).due.push(d);
      this.pump(d.endpointId);
    }
  }

  private remember(endpoint: EndpointDoc): void {
    this.endpointCache.delete(endpoint._id);
    this.endpointCache.set(endpoint._id, { doc: endpoint, at: this.now() });
    if (this.endpointCache.size > MAX_CACHED) this.endpointCache.delete(this.endpointCache.keys().next().value!);
  }

  /** The delivery's endpoint, read again unless this process saw it within the last second. */
  private async endpointOf(d: DeliveryDoc): Promise<EndpointDoc | null> {
    const cached = this.endpointCache.get(d.endpointId);
    if (cached && cached.doc.accountId === d.accountId && this.now() - cached.at < ENDPOINT_FRESH_MS) return cached.doc;
    const doc = await this.o.endpoints.findById(d.accountId, d.endpointId);
    if (doc) this.remember(doc);
    else this.endpointCache.delete(d.endpointId);
    return doc;
  }

  /**
   * Waits for the endpoint's turn: a Retry-After it answered postpones the delivery (stored, claim given
   * back; answers false), and a rate limit waits here for the request's slot, the claim renewed if the wait
   * outlasts it. Answers the delivery to send (its claim possibly renewed), or null when it is not sent now.
   */
  private async awaitTurn(d: DeliveryDoc, endpoint: EndpointDoc): Promise<DeliveryDoc | null> {
    const pausedUntil = endpoint.pausedUntil?.getTime() ?? 0;
    if (pausedUntil > this.now()) {
      await this.o.deliveries.postpone(d._id, this.owner, new Date(pausedUntil));
      this.wakeAt(pausedUntil - this.now());
      return null;
    }
    if (endpoint.ordering === 'ordered' && d.subject) {
      const before = await this.o.deliveries.earlierPending(d.endpointId, d.subject, d.eventId);
      if (before) {
        // Due again when the earlier one is (its record makes this due at once when it finishes), or at the next poll.
        const at = Math.max(before.nextAttemptAt?.getTime() ?? 0, this.now() + this.o.pollMs);
        await this.o.deliveries.postpone(d._id, this.owner, new Date(at));
        this.wakeAt(at - this.now());
        return null;
      }
    }
    if (!endpoint.rateLimitPerSecond) return d;
    const slot = await this.o.rateSlots.take(endpoint._id, endpoint.rateLimitPerSecond, this.now);
    const wait = slot.getTime() - this.now();
    if (wait <= 0) return d;
    if (d.lockedUntil.getTime() - this.now() < wait + this.o.attemptTimeoutMs + RENEW_MARGIN_MS) {
      const renewed = await this.o.deliveries.renewClaim(d._id, this.owner, new Date(this.now() + wait + this.o.leaseMs));
      if (!renewed) return null; // the claim lapsed and another owner has it
      d = { ...d, lockedUntil: renewed };
    }
    if (!(await sleep(wait, this.abort.signal))) {
      await this.o.deliveries.release(d._id, this.owner);
      return null;
    }
    return d;
  }

  private async attempt(d: DeliveryDoc, known: EndpointDoc | null): Promise<void> {
    let freed = false;
    const free = () => {
      if (freed) return;
      freed = true;
      this.release(d.endpointId);
    };
    /** Set when this attempt goes before its delivery is stored. */
    const first = this.unstored.get(d._id);
    try {
      const endpoint = known ?? (await this.endpointOf(d));
      // Its endpoint changed while it waited (disabled, paused, ordered, rate-limited): stored first, as any other.
      if (first?.state === 'unstored' && !(endpoint && sendsFirst(endpoint, this.now()))) {
        if (!(await this.spill(first))) {
          this.foreign.delete(d._id); // another process stored it first and has it
          return;
        }
      }
      if (!endpoint || endpoint.status !== 'enabled') {
        await this.o.deliveries.cancel(d._id, this.owner);
        return;
      }
      const turn = await this.awaitTurn(d, endpoint);
      if (!turn) return;
      d = turn;
      const headers: Record<string, string> = {
        // The receiver checks webhook-timestamp against its own clock: the wall clock, whatever `now` says.
        ...signedHeaders(this.signingSecrets(endpoint), d.eventId, Math.floor(Date.now() / 1000), d.body),
        'content-type': 'application/json',
        'user-agent': this.o.userAgent,
        ...(d.requestId ? { 'x-request-id': d.requestId } : {}),
      };
      const traced = attemptSpan(d, endpoint);
      const carrier = traced ? carrierOf(traced.ctx) : d.trace;
      if (carrier) Object.assign(headers, carrier);
      const at = new Date(this.now());
      if (first) first.sentAt = at.getTime();
      let result: AttemptResult;
      try {
        result = await this.o.sender.send(endpoint.url, headers, d.body, this.abort.signal);
      } catch (err) {
        endSpan(traced?.span, err);
        throw err;
      }
      if (traced) {
        if (result.statusCode) traced.span.setAttribute('http.response.status_code', result.statusCode);
        endSpan(traced.span, result.ok ? undefined : (result.error ?? `status ${result.statusCode}`));
      }
      if (result.aborted) {
        // One not stored stays so: its event is consumed again after the stop.
        if (first?.state !== 'unstored') await this.o.deliveries.release(d._id, this.owner);
        return;
      }
      // Held here before the slot frees, so what waits for the endpoint is not sent in the meantime.
      if (!result.ok && result.retryAfterMs) this.holdLocally(endpoint, new Date(this.now() + Math.min(result.retryAfterMs, this.o.maxRetryAfterMs)));
      // The endpoint's slot is free as soon as it has answered; bookkeeping need not hold it.
      this.unrecorded++;
      free();
      try {
        // In the attempt's own context, whatever context started this pump: its delivery.completed continues the
        // delivery's trace, and no other.
        await context.with(withAccount(traced ? traced.ctx : contextOf(d.trace), d.accountId), () => this.record(d, endpoint, at, result, first));
      } finally {
        const wasCapped = this.unrecorded >= MAX_UNRECORDED;
        this.unrecorded--;
        if (wasCapped && !this.stopped) this.pumpAll();
      }
    } catch (err) {
      // The claim expires and another pass retries; nothing is lost. One not stored is stored claimed first.
      this.o.logger.error({ err, deliveryId: d._id, endpointId: d.endpointId }, 'delivery attempt failed unexpectedly');
      if (first?.state === 'unstored' && !this.stopped)
        this.spill(first).catch((e: unknown) => this.o.logger.warn({ err: e, deliveryId: d._id }, 'storing a delivery failed; the spill timer retries'));
    } finally {
      free();
    }
  }

  private openSecret(sealed: string, endpointId: string): KeyObject {
    const key = `${endpointId}/${sealed}`;
    let secret = this.secretCache.get(key);
    if (secret === undefined) {
      secret = signingKeyOf(this.o.secrets.open(sealed, endpointId));
      this.secretCache.set(key, secret);
      if (this.secretCache.size > MAX_CACHED) this.secretCache.delete(this.secretCache.keys().next().value!);
    }
    return secret;
  }

  /** The current secret, and during a rotation's overlap the previous one too (newest first). */
  private signingSecrets(endpoint: EndpointDoc): KeyObject[] {
    const secrets = [this.openSecret(endpoint.secretSealed, endpoint._id)];
    if (endpoint.previousSecretSealed && endpoint.previousSecretExpiresAt && endpoint.previousSecretExpiresAt.getTime() > this.now()) {
      secrets.push(this.openSecret(endpoint.previousSecretSealed, endpoint._id));
    }
    return secrets;
  }

  /**
   * Stores an attempt: with its delivery when the delivery is not stored yet, else on it (after a spill under
   * way, if any). Answers whether it was stored (not when another process had stored the delivery first).
   */
  private async store(
    d: DeliveryDoc,
    first: Unstored | undefined,
    attempt: AttemptDoc,
    next: { status: DeliveryStatus; nextAttemptAt: Date | null },
    events: DomainEvent[],
  ): Promise<boolean> {
    while (first?.state === 'spilling') await first.spill!.catch(() => {});
    if (first?.state === 'foreign') {
      this.foreign.delete(d._id); // this attempt was its turn
      return false;
    }
    if (first?.state !== 'unstored') return this.o.deliveries.recordAttempt(d._id, { owner: this.owner, until: d.lockedUntil }, attempt, next, events);
    first.state = 'recording';
    for (let tries = 1; ; tries++) {
      try {
        const inserted = await this.o.deliveries.recordFirstAttempt(first.doc, attempt, next, events);
        this.settle(first, inserted ? 'stored' : 'foreign');
        this.foreign.delete(d._id); // not queued: this attempt was its turn
        return inserted;
      } catch (err) {
        // Not stored: its event is consumed again after this process stops (see stop), or elsewhere after a crash.
        if (this.stopped) {
          first.state = 'unstored';
          throw err;
        }
        this.o.logger.warn({ err, deliveryId: d._id }, 'storing a delivery with its first attempt failed; retrying');
        await sleep(Math.min(5_000, 100 * 2 ** tries), this.abort.signal);
      }
    }
  }

  private async record(d: DeliveryDoc, endpoint: EndpointDoc, at: Date, result: AttemptResult, first?: Unstored): Promise<void> {
    const made = seriesAttempts(d) + 1;
    let status: DeliveryStatus = 'succeeded';
    let nextAttemptAt: Date | null = null;
    let retryAfterMs: number | null = null;
    if (!result.ok) {
      const regular = result.statusCode === 410 ? null : nextDelayMs(this.o.retryScheduleMs, made);
      // A receiver that pushed back gets its wait (bounded), if later than the regular schedule's.
      const pushback = retryDelayWithPushback(regular ?? 0, result.retryAfterMs, this.o.maxRetryAfterMs);
      retryAfterMs = pushback.retryAfterMs;
      status = regular === null ? 'failed' : 'pending';
      if (regular !== null) nextAttemptAt = new Date(this.now() + pushback.delayMs);
      if (retryAfterMs) await this.pause(endpoint, new Date(this.now() + retryAfterMs));
    }
    const attempt: AttemptDoc = {
      at,
      statusCode: result.statusCode,
      latencyMs: result.latencyMs,
      error: result.error,
      ...(retryAfterMs !== null ? { retryAfterMs } : {}),
      requestHeaders: result.requestHeaders,
      response: result.response,
    };
    // A final state emits exactly one delivery.completed (staged with its record write, see RecordOutbox),
    // so the count downstream is exact.
    const completed =
      status === 'pending'
        ? []
        : [
            makeEvent('delivery.completed', {
              accountId: d.accountId,
              subject: d.endpointId,
              requestId: d.requestId,
              data: { endpointId: d.endpointId, eventId: d.eventId, outcome: status === 'succeeded' ? 'succeeded' : 'failed', attempts: made },
            }),
          ];
    const recorded = await this.store(d, first, attempt, { status, nextAttemptAt }, completed);
    if (recorded && nextAttemptAt) this.wakeAt(nextAttemptAt.getTime() - this.now());
    if (recorded && status !== 'pending' && endpoint.ordering === 'ordered' && d.subject) {
      if (await this.o.deliveries.releaseSuccessors(d.endpointId, d.subject, d.eventId)) this.kick();
    }
    this.o.logger.debug({ deliveryId: d._id, endpointId: endpoint._id, statusCode: result.statusCode, attempt: made, status }, 'delivery attempt');
    if (result.ok) {
      if (endpoint.failingSince || this.failing.has(endpoint._id)) {
        await this.o.endpoints.markHealthy(d.accountId, endpoint._id);
        this.failing.delete(endpoint._id);
      }
      return;
    }
    if (result.statusCode === 410) {
      await this.disable(endpoint, 'the endpoint answered 410 Gone');
      return;
    }
    const since = await this.o.endpoints.markFailing(d.accountId, endpoint._id, at);
    if (this.failing.size < MAX_CACHED) this.failing.add(endpoint._id);
    if (since && this.now() - since.getTime() >= this.o.disableAfterMs) {
      const cutoff = new Date(this.now() - this.o.disableAfterMs);
      await this.disable(endpoint, `every attempt failed for ${humanDuration(this.o.disableAfterMs)}`, { failingSince: { $lte: cutoff } });
    }
  }

  /** Holds the endpoint's other deliveries too (every instance reads it from the endpoint, this one at once). */
  private async pause(endpoint: EndpointDoc, until: Date): Promise<void> {
    this.holdLocally(endpoint, until);
    await this.o.endpoints.pauseUntil(endpoint.accountId, endpoint._id, until);
  }

  private holdLocally(endpoint: EndpointDoc, until: Date): void {
    const cached = this.endpointCache.get(endpoint._id)?.doc ?? endpoint;
    if ((cached.pausedUntil?.getTime() ?? 0) < until.getTime()) this.remember({ ...cached, pausedUntil: until });
  }

  private async disable(endpoint: EndpointDoc, reason: string, where: Record<string, unknown> = {}): Promise<void> {
    const event = makeEvent('endpoint.disabled', { accountId: endpoint.accountId, subject: endpoint._id, data: { endpointId: endpoint._id, reason } });
    const done = await this.o.endpoints.disable(endpoint.accountId, endpoint._id, reason, event, where);
    if (!done) return;
    this.forgetEndpoint(endpoint._id);
    this.o.logger.info({ endpointId: endpoint._id, accountId: endpoint.accountId, reason }, 'webhook endpoint disabled');
    await this.o.deliveries.cancelForEndpoint(endpoint.accountId, endpoint._id);
  }

  /** Longer waits are left to the poll, which reads the stored schedule. */
  private wakeAt(delayMs: number): void {
    if (this.stopped || delayMs > MAX_LOCAL_TIMER_MS) return;
    const t = setTimeout(
      () => {
        this.timers.delete(t);
        this.kick();
      },
      Math.max(1, delayMs),
    );
    this.timers.add(t);
  }
}

/** Resolves true after `ms`, or false as soon as the signal aborts. */
function sleep(ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const onAbort = () => {
      clearTimeout(t);
      resolve(false);
    };
    const t = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve(true);
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

function humanDuration(ms: number): string {
  const [size, unit] = ms >= 86_400_000 ? [86_400_000, 'day'] : ms >= 3_600_000 ? [3_600_000, 'hour'] : ms >= 60_000 ? [60_000, 'minute'] : [1_000, 'second'];
  const n = Math.round((ms / (size as number)) * 10) / 10;
  return `${n} ${unit}${n === 1 ? '' : 's'}`;
}

/**
 * A client span for one delivery attempt, child of the trace stored with the delivery (the consumption of its
 * event): the receiver gets its `traceparent`. Tracing off, the stored context is sent as it is.
 */
function attemptSpan(d: DeliveryDoc, endpoint: EndpointDoc): { span: Span; ctx: Context } | undefined {
  if (!tracingEnabled() || !d.trace) return undefined;
  const parent = contextOf(d.trace);
  const span = startSpan(
    'webhook delivery',
    {
      kind: SpanKind.CLIENT,
      attributes: {
        'http.request.method': 'POST',
        'server.address': hostOf(endpoint.url),
        'dap.delivery_id': d._id,
        'dap.endpoint_id': d.endpointId,
        'dap.event_id': d.eventId,
        'dap.event_type': d.eventType,
        'dap.attempt': seriesAttempts(d) + 1,
      },
    },
    parent,
  );
  return span && { span, ctx: trace.setSpan(parent, span) };
}

/** The endpoint's host only: its path and query may hold a customer's token. */
function hostOf(url: string): string {
  try {
    return new URL(url).hostname;
  } catch {
    return '';
  }
}
