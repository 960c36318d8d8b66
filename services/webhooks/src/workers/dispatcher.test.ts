import { randomBytes } from 'node:crypto';
import { createLogger } from '@dap/logger';
import { SecretBox, newWebhookSecret } from '../domain/secret.ts';
import { newDelivery, UNLOCKED, type AttemptDoc, type DeliveryDoc } from '../persistence/delivery.repository.ts';
import type { EndpointDoc } from '../persistence/endpoint.repository.ts';
import { Dispatcher, SPILL_AFTER_MS, SPILL_MAX_AGE_MS, type DispatcherOptions } from './dispatcher.ts';
import type { AttemptResult } from './http-sender.ts';

/** The dispatcher's scheduling against in-memory fakes: slots, the order of what waits, claim renewal. */
const box = new SecretBox(randomBytes(32));
const endpoint: EndpointDoc = {
  _id: 'whk_A',
  accountId: 'acct_1',
  url: 'http://receiver.test/hooks',
  events: ['*'],
  description: '',
  status: 'enabled',
  disabledReason: null,
  secretSealed: box.seal(newWebhookSecret(), 'whk_A'),
  failingSince: null,
  createdAt: new Date(),
  updatedAt: new Date(),
};

function delivery(eventId: string, lockedFor = 60_000): DeliveryDoc {
  return newDelivery(
    { accountId: 'acct_1', endpointId: 'whk_A', eventId, eventType: 'report.completed', requestId: null, body: '{}' },
    { until: new Date(Date.now() + lockedFor), owner: 'x', instance: 'i' },
  );
}

function harness(
  opts: {
    concurrency?: number;
    renew?: boolean;
    maxRetryAfterMs?: number;
    rateSlots?: DispatcherOptions['rateSlots'];
    endpoint?: EndpointDoc;
    existing?: string[];
    now?: () => number;
  } = {},
) {
  const ep = opts.endpoint ?? endpoint;
  const sent: string[] = [];
  /** Each record's attempt and next attempt time, by delivery id. */
  const attempts: Array<{ id: string; attempt: AttemptDoc; nextAttemptAt: Date | null }> = [];
  const postponed: Array<{ id: string; at: Date }> = [];
  const paused: Date[] = [];
  const answers: Array<(r: AttemptResult) => void> = [];
  const recorded: Array<{ id: string; status: string; events: number }> = [];
  const renewed: string[] = [];
  /** The claim each record was written under (owner and expiry), by delivery id. */
  const claims = new Map<string, { owner: string; until: Date }>();
  /** What the claim query finds next (a due retry, once). */
  const due: DeliveryDoc[] = [];
  /** The time each claim query asked for due deliveries at. */
  const claimedAt: Date[] = [];
  /** Every write and send, in order: `send <webhook-id>`, `insert <id> <status> <attempts>`, `record <id> <status>`. */
  const log: string[] = [];
  /** Deliveries already stored by someone else: inserting them again is refused. */
  const existing = new Set<string>(opts.existing ?? []);
  const options: DispatcherOptions = {
    deliveries: {
      claimDue: async (now) => {
        claimedAt.push(now);
        return due.shift() ?? null;
      },
      releaseInstanceClaims: async () => 0,
      renewClaim: async (id, _owner, until) => {
        renewed.push(id);
        return opts.renew === false ? null : until;
      },
      releaseOwner: async () => 0,
      recordAttempt: async (id, claim, attempt, next, events = []) => {
        log.push(`record ${id} ${next.status}`);
        recorded.push({ id, status: next.status, events: events.length });
        attempts.push({ id, attempt, nextAttemptAt: next.nextAttemptAt });
        claims.set(id, claim);
        return true;
      },
      recordFirstAttempt: async (doc, attempt, next, events = []) => {
        if (existing.has(doc._id)) return false;
        existing.add(doc._id);
        log.push(`insert ${doc._id} ${next.status} 1`);
        recorded.push({ id: doc._id, status: next.status, events: events.length });
        attempts.push({ id: doc._id, attempt, nextAttemptAt: next.nextAttemptAt });
        return true;
      },
      insertMany: async (docs) => {
        const fresh = docs.filter((d) => !existing.has(d._id));
        for (const d of fresh) {
          existing.add(d._id);
          log.push(`insert ${d._id} ${d.status} ${d.attempts.length}`);
        }
        return new Set(fresh.map((d) => d._id));
      },
      cancel: async () => {},
      release: async () => {},
      cancelForEndpoint: async () => 0,
      earlierPending: async () => null,
      releaseSuccessors: async () => 0,
      postpone: async (id, _owner, at) => {
        postponed.push({ id, at });
      },
    },
    endpoints: {
      findById: async () => ep,
      pauseUntil: async (_account, _id, until) => {
        paused.push(until);
      },
      markHealthy: async () => {},
      markFailing: async () => null,
      disable: async () => null,
    },
    sender: {
      send: (_url, headers, _body, signal) => {
        sent.push(headers['webhook-id']!);
        log.push(`send ${headers['webhook-id']}`);
        return new Promise<AttemptResult>((resolve) => {
          answers.push(resolve);
          signal?.addEventListener('abort', () =>
            resolve({ ok: false, statusCode: null, latencyMs: 1, error: 'aborted', aborted: true, retryAfterMs: null, requestHeaders: headers, response: null }),
          );
        });
      },
    },
    secrets: box,
    logger: createLogger({ name: 'test', level: 'silent' }),
    retryScheduleMs: [0, 60_000],
    pollMs: 60_000,
    endpointConcurrency: opts.concurrency ?? 2,
    maxInFlight: 100,
    disableAfterMs: 3_600_000,
    leaseMs: 60_000,
    userAgent: 'test',
    instanceId: 'test-instance',
    attemptTimeoutMs: 15_000,
    rateSlots: opts.rateSlots ?? { take: async () => new Date() },
    maxRetryAfterMs: opts.maxRetryAfterMs ?? 3_600_000,
    now: opts.now,
  };
  const dispatcher = new Dispatcher(options);
  const tick = () => new Promise((r) => setTimeout(r, 5));
  const answerNext = async (status = 200, retryAfterMs: number | null = null) => {
    answers.shift()!({
      ok: status < 300,
      statusCode: status,
      latencyMs: 1,
      error: status < 300 ? null : `HTTP ${status}`,
      aborted: false,
      retryAfterMs,
      requestHeaders: {},
      response: null,
    });
    await tick();
  };
  /** Plans and inserts a new delivery as the fan-out does. */
  const offer = (d: DeliveryDoc) => {
    const plan = dispatcher.plan(d.endpointId, d.body.length);
    if (plan === 'send') dispatcher.dispatchClaimed(d, ep);
    else if (plan === 'queue') dispatcher.enqueueClaimed(d, ep);
    return plan;
  };
  /** Takes a new delivery as the fan-out does for an endpoint that is sent to before storing; answers its durable promise, and whether it has settled. */
  const offerFirst = (d: DeliveryDoc) => {
    const plan = dispatcher.plan(d.endpointId, d.body.length);
    if (plan === 'defer') throw new Error('no room');
    const state = { settled: null as null | 'stored' | Error };
    const durable = dispatcher.sendFirst(d, ep, plan);
    durable.then(
      () => (state.settled = 'stored'),
      (err: Error) => (state.settled = err),
    );
    return { plan, durable, state };
  };
  return { dispatcher, sent, recorded, renewed, claims, due, claimedAt, answerNext, offer, offerFirst, tick, attempts, postponed, paused, log, answers };
}

describe('Dispatcher', () => {
  it('times claims, retries and Retry-After pauses by the clock it is given, not the system clock', async () => {
    const T = Date.parse('2040-01-01T00:00:00Z');
    const h = harness({ concurrency: 1, now: () => T });
    try {
      await h.dispatcher.start();
      expect(h.claimedAt.map((d) => d.getTime())).toEqual([T]);
      expect(h.dispatcher.leaseUntil().getTime()).toBe(T + 60_000);
      const d = newDelivery(
        { accountId: 'acct_1', endpointId: 'whk_A', eventId: 'c1', eventType: 'report.completed', requestId: null, body: '{}' },
        { until: new Date(T + 60_000), owner: 'x', instance: 'i' },
        new Date(T),
      );
      expect(h.offer(d)).toBe('send');
      await h.tick();
      expect(h.sent).toEqual(['c1']);
      await h.answerNext(503, 120_000); // longer than the schedule's 60 s ± 10 %
      expect(h.attempts[0]!.attempt.at.getTime()).toBe(T);
      expect(h.attempts[0]!.nextAttemptAt!.getTime()).toBe(T + 120_000);
      expect(h.paused.map((p) => p.getTime())).toEqual([T + 120_000]);
    } finally {
      await h.dispatcher.stop(); // a failed check must not leave its timers running
    }
  });

  it('sends at once while the endpoint has slots, then holds new deliveries in order until one frees', async () => {
    const h = harness({ concurrency: 2 });
    await h.dispatcher.start();
    expect(['e1', 'e2', 'e3', 'e4'].map((id) => h.offer(delivery(id)))).toEqual(['send', 'send', 'queue', 'queue']);
    await h.tick();
    expect(h.sent).toEqual(['e1', 'e2']);
    await h.answerNext();
    expect(h.sent).toEqual(['e1', 'e2', 'e3']);
    await h.answerNext();
    await h.answerNext();
    await h.answerNext();
    expect(h.sent).toEqual(['e1', 'e2', 'e3', 'e4']);
    expect(h.recorded.map((r) => [r.id, r.status, r.events])).toEqual(['e1', 'e2', 'e3', 'e4'].map((e) => [`${e}:whk_A`, 'succeeded', 1]));
    await h.dispatcher.stop();
  });

  it('sends what the claim query found (retries) ahead of new deliveries held for the same endpoint', async () => {
    const retry = { ...delivery('r1'), attempts: [{ at: new Date(), statusCode: 500, latencyMs: 1, error: 'HTTP 500' }] };
    const h = harness({ concurrency: 1 });
    expect(h.offer(delivery('n1'))).toBe('defer'); // not started: stored unclaimed, for the claim query
    await h.dispatcher.start();
    expect(h.offer(delivery('n2'))).toBe('send');
    expect(h.offer(delivery('n3'))).toBe('queue');
    await h.tick();
    // A retry falls due while the endpoint is busy and new deliveries wait.
    h.due.push(retry);
    h.dispatcher.kick();
    await h.tick();
    await h.answerNext(); // n2 answered: the retry goes next, before n3
    await h.answerNext();
    await h.answerNext();
    expect(h.sent).toEqual(['n2', 'r1', 'n3']);
    expect(h.recorded.find((r) => r.id === 'r1:whk_A')).toMatchObject({ status: 'succeeded', events: 1 });
    await h.dispatcher.stop();
  });

  it('renews a held claim that would lapse during its attempt, and skips it when the claim was lost', async () => {
    const h = harness({ concurrency: 1, renew: false });
    await h.dispatcher.start();
    h.offer(delivery('busy'));
    h.offer(delivery('stale', 5_000)); // less than the 15 s attempt timeout left
    h.offer(delivery('later'));
    await h.tick();
    await h.answerNext();
    await h.tick();
    expect(h.renewed).toEqual(['stale:whk_A']);
    expect(h.sent).toEqual(['busy', 'later']); // the lapsed claim may be another instance's now
    await h.answerNext();
    await h.dispatcher.stop();
  });

  it('records under the claim it holds: its own owner id and the expiry it set or renewed', async () => {
    const h = harness({ concurrency: 1 });
    await h.dispatcher.start();
    const fresh = delivery('c1');
    h.offer(fresh);
    h.offer(delivery('c2', 5_000)); // renewed before its attempt
    await h.tick();
    await h.answerNext();
    await h.tick();
    await h.answerNext();
    expect(h.claims.get('c1:whk_A')).toEqual({ owner: h.dispatcher.owner, until: fresh.lockedUntil });
    const renewed = h.claims.get('c2:whk_A')!;
    expect(renewed.owner).toBe(h.dispatcher.owner);
    expect(renewed.until.getTime()).toBeGreaterThan(Date.now() + 50_000); // the 60 s lease from the renewal, not the 5 s left
    await h.dispatcher.stop();
  });

  it('records a failed attempt with its retry and no event, and the final failure with delivery.completed', async () => {
    const h = harness({ concurrency: 1 });
    await h.dispatcher.start();
    h.offer(delivery('f1'));
    await h.tick();
    await h.answerNext(500);
    expect(h.recorded).toEqual([{ id: 'f1:whk_A', status: 'pending', events: 0 }]);
    const second = { ...delivery('f1'), attempts: [{ at: new Date(), statusCode: 500, latencyMs: 1, error: 'HTTP 500' }], lockedUntil: UNLOCKED };
    h.dispatcher.dispatchClaimed(second, endpoint);
    await h.tick();
    await h.answerNext(503);
    expect(h.recorded[1]).toEqual({ id: 'f1:whk_A', status: 'failed', events: 1 });
    await h.dispatcher.stop();
  });

  describe('a receiver that pushes back (429/503 with Retry-After)', () => {
    const NOW = new Date('2026-11-27T10:00:00Z');
    // Only the clock is fake: the harness's short ticks still run.
    beforeEach(() => jest.useFakeTimers({ now: NOW, doNotFake: ['setTimeout', 'clearTimeout', 'setImmediate', 'setInterval', 'clearInterval', 'nextTick', 'queueMicrotask'] }));
    afterEach(() => jest.useRealTimers());

    it('waits as long as Retry-After asks when that is later than the schedule, records it and holds the endpoint', async () => {
      const h = harness({ concurrency: 1 });
      await h.dispatcher.start();
      h.offer(delivery('p1'));
      await h.tick();
      await h.answerNext(429, 120_000); // the schedule says 60 s (± 10 %)
      expect(h.attempts[0]).toMatchObject({ id: 'p1:whk_A', attempt: { statusCode: 429, retryAfterMs: 120_000 }, nextAttemptAt: new Date(NOW.getTime() + 120_000) });
      expect(h.paused).toEqual([new Date(NOW.getTime() + 120_000)]);
      await h.dispatcher.stop();
    });

    it('bounds Retry-After by the configured maximum', async () => {
      const h = harness({ concurrency: 1, maxRetryAfterMs: 3_600_000 });
      await h.dispatcher.start();
      h.offer(delivery('p2'));
      await h.tick();
      await h.answerNext(503, 10 * 3_600_000);
      expect(h.attempts[0]).toMatchObject({ attempt: { statusCode: 503, retryAfterMs: 3_600_000 }, nextAttemptAt: new Date(NOW.getTime() + 3_600_000) });
      expect(h.paused).toEqual([new Date(NOW.getTime() + 3_600_000)]);
      await h.dispatcher.stop();
    });

    it('keeps the regular schedule when it is later than Retry-After, and records no push-back without the header', async () => {
      const h = harness({ concurrency: 1 });
      await h.dispatcher.start();
      h.offer(delivery('p3'));
      h.offer(delivery('p4'));
      await h.tick();
      await h.answerNext(429, 1_000);
      await h.tick();
      const first = h.attempts[0]!;
      expect(first.attempt.retryAfterMs).toBe(1_000);
      const delay = first.nextAttemptAt!.getTime() - NOW.getTime();
      expect(delay).toBeGreaterThanOrEqual(54_000); // 60 s ± 10 % jitter, not 1 s
      expect(delay).toBeLessThanOrEqual(66_000);
      expect(h.postponed).toEqual([{ id: 'p4:whk_A', at: new Date(NOW.getTime() + 1_000) }]); // held for the 1 s asked
      await h.dispatcher.stop();
      const h2 = harness({ concurrency: 1 });
      await h2.dispatcher.start();
      h2.offer(delivery('p5'));
      await h2.tick();
      await h2.answerNext(429, null);
      expect(h2.attempts[0]!.attempt).not.toHaveProperty('retryAfterMs');
      expect(h2.paused).toEqual([]);
      await h2.dispatcher.stop();
    });

    it("postpones the endpoint's other deliveries until the pause ends instead of sending them", async () => {
      const pausedUntil = new Date(NOW.getTime() + 30_000);
      const h = harness({ concurrency: 2, endpoint: { ...endpoint, pausedUntil } });
      await h.dispatcher.start();
      h.offer(delivery('q1'));
      await h.tick();
      expect(h.sent).toEqual([]);
      expect(h.postponed).toEqual([{ id: 'q1:whk_A', at: pausedUntil }]);
      await h.dispatcher.stop();
      // Positive control: a pause that has ended holds nothing.
      const h2 = harness({ concurrency: 2, endpoint: { ...endpoint, pausedUntil: new Date(NOW.getTime() - 1) } });
      await h2.dispatcher.start();
      h2.offer(delivery('q2'));
      await h2.tick();
      expect(h2.sent).toEqual(['q2']);
      expect(h2.postponed).toEqual([]);
      await h2.answerNext();
      await h2.dispatcher.stop();
    });
  });
});

describe('Dispatcher: deliveries sent before they are stored', () => {
  it('sends first, then stores the delivery once, with its outcome; it is durable only then', async () => {
    const h = harness({ concurrency: 1 });
    await h.dispatcher.start();
    const a = h.offerFirst(delivery('s1'));
    const b = h.offerFirst(delivery('s2'));
    expect([a.plan, b.plan]).toEqual(['send', 'queue']);
    await h.tick();
    // Nothing is written before the request goes, and nothing is durable while it is on the wire.
    expect(h.log).toEqual(['send s1']);
    expect(a.state.settled).toBeNull();
    await h.answerNext(200);
    await h.answerNext(500);
    expect(h.log).toEqual(['send s1', 'insert s1:whk_A succeeded 1', 'send s2', 'insert s2:whk_A pending 1']);
    expect([a.state.settled, b.state.settled]).toEqual(['stored', 'stored']);
    // A failed first attempt is stored with its retry, for the claim query (no claim held), and no event yet.
    expect(h.recorded).toEqual([
      { id: 's1:whk_A', status: 'succeeded', events: 1 },
      { id: 's2:whk_A', status: 'pending', events: 0 },
    ]);
    expect(h.attempts[1]!.nextAttemptAt!.getTime()).toBeGreaterThan(Date.now() + 50_000);
    await h.dispatcher.stop();
  });

  it('knows what it holds, so an event consumed again is not sent twice; what it does not hold is sent', async () => {
    const h = harness({ concurrency: 1 });
    await h.dispatcher.start();
    const a = h.offerFirst(delivery('h1'));
    await h.tick();
    expect(h.dispatcher.held('h1:whk_A')).toBe(a.durable);
    await h.answerNext(200);
    await expect(h.dispatcher.held('h1:whk_A')).resolves.toBeUndefined(); // stored lately
    expect(h.dispatcher.held('h2:whk_A')).toBeNull(); // positive control: unknown here
    expect(h.sent).toEqual(['h1']);
    await h.dispatcher.stop();
  });

  it('records nothing over a delivery another process stored first (its event was consumed twice)', async () => {
    const h = harness({ concurrency: 1, existing: ['x1:whk_A'] });
    await h.dispatcher.start();
    const a = h.offerFirst(delivery('x1'));
    const b = h.offerFirst(delivery('x2'));
    await h.tick();
    await h.answerNext(200);
    await h.answerNext(200);
    expect(h.log).toEqual(['send x1', 'send x2', 'insert x2:whk_A succeeded 1']);
    expect([a.state.settled, b.state.settled]).toEqual(['stored', 'stored']);
    await h.dispatcher.stop();
  });

  it('fails the durable promise of what it stops before storing, so the event is consumed again', async () => {
    const h = harness({ concurrency: 1 });
    await h.dispatcher.start();
    const a = h.offerFirst(delivery('q1'));
    const b = h.offerFirst(delivery('q2'));
    await h.tick();
    await h.dispatcher.stop(); // q1 is cut short on the wire, q2 never went
    expect(a.state.settled).toBeInstanceOf(Error);
    expect(b.state.settled).toBeInstanceOf(Error);
    expect(h.log).toEqual(['send q1']); // nothing stored: not as released, not as anything
  });

  describe('after SPILL_AFTER_MS', () => {
    beforeEach(() => jest.useFakeTimers({ doNotFake: ['nextTick', 'queueMicrotask', 'setImmediate'] }));
    afterEach(() => jest.useRealTimers());
    const answer = (h: ReturnType<typeof harness>, status: number) =>
      h.answers.shift()!({ ok: status < 300, statusCode: status, latencyMs: 1, error: null, aborted: false, retryAfterMs: null, requestHeaders: {}, response: null });

    it('stores what is still on the wire or waiting, claimed and without an attempt, then records its attempt on it', async () => {
      const h = harness({ concurrency: 1 });
      await h.dispatcher.start();
      const a = h.offerFirst(delivery('w1'));
      const b = h.offerFirst(delivery('w2'));
      await jest.advanceTimersByTimeAsync(SPILL_AFTER_MS - 300);
      expect(h.log).toEqual(['send w1']); // not yet
      await jest.advanceTimersByTimeAsync(600);
      expect(h.log).toEqual(['send w1', 'insert w1:whk_A pending 0', 'insert w2:whk_A pending 0']);
      expect([a.state.settled, b.state.settled]).toEqual(['stored', 'stored']);
      answer(h, 200);
      await jest.advanceTimersByTimeAsync(5);
      answer(h, 200);
      await jest.advanceTimersByTimeAsync(5);
      // Their attempts are recorded on the stored deliveries, under the claims they were stored with.
      expect(h.log.slice(3)).toEqual(['record w1:whk_A succeeded', 'send w2', 'record w2:whk_A succeeded']);
      expect(h.claims.get('w1:whk_A')).toMatchObject({ owner: h.dispatcher.owner });
      await h.dispatcher.stop();
    });

    it('does not store twice a backlog behind an endpoint that answers, short of SPILL_MAX_AGE_MS', async () => {
      const h = harness({ concurrency: 1 });
      await h.dispatcher.start();
      for (const id of ['b1', 'b2', 'b3']) h.offerFirst(delivery(id));
      await jest.advanceTimersByTimeAsync(SPILL_AFTER_MS - 100);
      answer(h, 200); // b1 answered in time; b2 goes out, b3 has waited past SPILL_AFTER_MS
      await jest.advanceTimersByTimeAsync(500);
      expect(h.log).toEqual(['send b1', 'insert b1:whk_A succeeded 1', 'send b2']);
      answer(h, 200);
      await jest.advanceTimersByTimeAsync(5);
      answer(h, 200);
      await jest.advanceTimersByTimeAsync(5);
      expect(h.log.slice(3)).toEqual(['insert b2:whk_A succeeded 1', 'send b3', 'insert b3:whk_A succeeded 1']);
      // Positive control: once an attempt stays unanswered that long, the endpoint's backlog is stored.
      h.offerFirst(delivery('m1'));
      h.offerFirst(delivery('m2'));
      await jest.advanceTimersByTimeAsync(SPILL_AFTER_MS + 300);
      expect(h.log.slice(6)).toEqual(['send m1', 'insert m1:whk_A pending 0', 'insert m2:whk_A pending 0']);
      await h.dispatcher.stop();
    });

    it('stores one that has waited SPILL_MAX_AGE_MS, however promptly its endpoint answers', async () => {
      const h = harness({ concurrency: 1 });
      await h.dispatcher.start();
      const n = Math.ceil(SPILL_MAX_AGE_MS / (SPILL_AFTER_MS - 100)) + 1;
      const ids = Array.from({ length: n }, (_, i) => `d${i}`);
      for (const id of ids) h.offerFirst(delivery(id));
      // Each answered within SPILL_AFTER_MS: the endpoint is never slow, but the last one waits for all the others.
      for (let i = 0; i < n - 2; i++) {
        await jest.advanceTimersByTimeAsync(SPILL_AFTER_MS - 100);
        answer(h, 200);
      }
      await jest.advanceTimersByTimeAsync(SPILL_AFTER_MS - 100);
      // The answered ones were stored once, with their outcome; the two left (on the wire, waiting) without one.
      expect(h.log.filter((l) => l.endsWith('pending 0'))).toEqual(ids.slice(-2).map((id) => `insert ${id}:whk_A pending 0`));
      expect(h.log.filter((l) => l.endsWith('succeeded 1'))).toHaveLength(n - 2);
      await h.dispatcher.stop();
    });
  });
});
