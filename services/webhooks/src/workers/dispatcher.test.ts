import { randomBytes } from 'node:crypto';
import { createLogger } from '@dap/logger';
import { SecretBox, newWebhookSecret } from '../domain/secret.ts';
import { newDelivery, UNLOCKED, type AttemptDoc, type DeliveryDoc } from '../persistence/delivery.repository.ts';
import type { EndpointDoc } from '../persistence/endpoint.repository.ts';
import { Dispatcher, type DispatcherOptions } from './dispatcher.ts';
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

function harness(opts: { concurrency?: number; renew?: boolean; maxRetryAfterMs?: number; rateSlots?: DispatcherOptions['rateSlots']; endpoint?: EndpointDoc } = {}) {
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
  const options: DispatcherOptions = {
    deliveries: {
      claimDue: async () => due.shift() ?? null,
      releaseInstanceClaims: async () => 0,
      renewClaim: async (id, _owner, until) => {
        renewed.push(id);
        return opts.renew === false ? null : until;
      },
      releaseOwner: async () => 0,
      recordAttempt: async (id, claim, attempt, next, events = []) => {
        recorded.push({ id, status: next.status, events: events.length });
        attempts.push({ id, attempt, nextAttemptAt: next.nextAttemptAt });
        claims.set(id, claim);
        return true;
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
  return { dispatcher, sent, recorded, renewed, claims, due, answerNext, offer, tick, attempts, postponed, paused };
}

describe('Dispatcher', () => {
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
