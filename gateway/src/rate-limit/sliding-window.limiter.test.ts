import { FailOpenLimiter, InMemoryLimiter, type Limiter } from './sliding-window.limiter.ts';

describe('fallback limiting', () => {
  it('admits the limit within a window and frees slots as old requests leave it', async () => {
    const limiter = new InMemoryLimiter(1_000);
    const t0 = 1_000_000;
    for (let i = 0; i < 3; i++) expect((await limiter.check('acct', 3, t0 + i)).allowed).toBe(true);
    const refused = await limiter.check('acct', 3, t0 + 500);
    expect(refused).toMatchObject({ allowed: false, remaining: 0, resetMs: 500 });
    expect((await limiter.check('acct', 3, t0 + 1_001)).allowed).toBe(true);
    expect((await limiter.check('other', 3, t0 + 500)).allowed).toBe(true);
  });

  it('uses the fallback, and reports it, only when the primary throws', async () => {
    const failures: unknown[] = [];
    const broken: Limiter = { check: async () => Promise.reject(new Error('redis down')), peek: async () => Promise.reject(new Error('redis down')) };
    const limiter = new FailOpenLimiter(broken, new InMemoryLimiter(60_000), (e) => failures.push(e));
    const d = await limiter.check('acct', 1);
    expect(d).toMatchObject({ allowed: true, source: 'fallback' });
    expect((await limiter.check('acct', 1)).allowed).toBe(false);
    expect(failures).toHaveLength(2);
  });
});
