import { LeasingLimiter } from './leasing.limiter.ts';
import { FailOpenLimiter, InMemoryLimiter, type Reservation, type SlidingWindowLimiter } from './sliding-window.limiter.ts';

/** A window whose answers the test releases one by one, or fails: what Redis does between a question and its answer. */
function scriptedWindow() {
  const pending: { want: number; resolve: (r: Reservation) => void; reject: (e: Error) => void }[] = [];
  const released: string[][] = [];
  const asked: number[] = [];
  const window = {
    reserve: (_key: string, _limit: number, want: number) =>
      new Promise<Reservation>((resolve, reject) => {
        asked.push(want);
        pending.push({ want, resolve, reject });
      }),
    release: async (_key: string, members: string[]) => void released.push(members),
    peek: async () => ({ allowed: true, limit: 1_000, remaining: 990, resetMs: 60_000, source: 'redis' as const }),
  };
  const grant = (n: number) => {
    const q = pending.shift()!;
    q.resolve({ granted: n, remaining: 500, resetMs: 60_000, members: Array.from({ length: n }, (_, i) => `m${i}`) });
  };
  return { window: window as unknown as SlidingWindowLimiter, pending, released, asked, grant };
}

describe('LeasingLimiter', () => {
  it('asks once for a bucket however many requests arrive meanwhile, and sizes the lease to them', async () => {
    const w = scriptedWindow();
    const limiter = new LeasingLimiter(w.window, { holdMs: 100, clock: () => 0 });
    const first = limiter.check('acct', 1_000);
    const more = Array.from({ length: 4 }, () => limiter.check('acct', 1_000));
    expect(w.pending.map((p) => p.want)).toEqual([1]);
    w.grant(1);
    await first;
    await new Promise((r) => setImmediate(r));
    // The four waiting ones ask together, once: one permit each.
    expect(w.pending.map((p) => p.want)).toEqual([4]);
    w.grant(4);
    expect((await Promise.all(more)).map((d) => d.allowed)).toEqual([true, true, true, true]);
    expect(w.pending).toHaveLength(0);
  });

  it('fails every request waiting on a question that fails, so each falls back when Redis is down', async () => {
    const w = scriptedWindow();
    const fellBack: unknown[] = [];
    const limiter = new FailOpenLimiter(new LeasingLimiter(w.window, { holdMs: 100, clock: () => 0 }), new InMemoryLimiter(60_000), (err) => fellBack.push(err));
    const checks = Array.from({ length: 3 }, () => limiter.check('acct', 1_000));
    expect(w.pending).toHaveLength(1);
    w.pending.shift()!.reject(new Error('redis down'));
    const decisions = await Promise.all(checks);
    expect(decisions.map((d) => [d.allowed, d.source])).toEqual([
      [true, 'fallback'],
      [true, 'fallback'],
      [true, 'fallback'],
    ]);
    expect(fellBack).toHaveLength(3);
    // The failed question is not left behind: the next request asks again.
    void limiter.check('acct', 1_000);
    expect(w.pending).toHaveLength(1);
  });

  it('shares a refusal with the requests that waited on it, and leases nothing', async () => {
    const w = scriptedWindow();
    const limiter = new LeasingLimiter(w.window, { holdMs: 100, clock: () => 0 });
    const checks = Array.from({ length: 3 }, () => limiter.check('acct', 1_000));
    w.grant(0);
    expect((await Promise.all(checks)).map((d) => d.allowed)).toEqual([false, false, false]);
    await limiter.stop();
    expect(w.released).toEqual([]);
  });

  it('hands back what a lease left when the hand-back is due, and reports a failed hand-back', async () => {
    const clock = { t: 0 };
    const w = scriptedWindow();
    const errors: unknown[] = [];
    w.window.release = async () => Promise.reject(new Error('redis down'));
    const limiter = new LeasingLimiter(w.window, { holdMs: 100, clock: () => clock.t, onReleaseError: (e) => errors.push(e) });
    // One request at a time, each granted what it asks for: 1, 2 (one left, used next), then 4 (three left).
    const admit = async () => {
      const decision = limiter.check('acct', 1_000);
      await new Promise((r) => setImmediate(r));
      if (w.pending.length) w.grant(w.pending[0]!.want);
      return decision;
    };
    for (let i = 0; i < 4; i++) expect(await admit()).toMatchObject({ allowed: true });
    expect(w.asked).toEqual([1, 2, 4]);
    // The window says 990 are left; this instance's 3 unused permits are not requests yet.
    expect(await limiter.peek('acct', 1_000)).toMatchObject({ remaining: 993 });
    await limiter.sweep();
    expect(errors).toHaveLength(0); // positive control below: not lapsed yet, nothing handed back
    clock.t = 100;
    await limiter.sweep();
    expect(errors).toHaveLength(1);
  });
});
