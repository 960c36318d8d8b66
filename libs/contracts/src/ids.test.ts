import { idSchema, isId, newId, pooledRandom } from './ids.ts';

describe('ids', () => {
  it('are prefixed ULIDs, unique and in creation order', () => {
    const ids = Array.from({ length: 20_000 }, () => newId('req'));
    expect(ids.every((id) => isId('req', id))).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort()).toEqual(ids);
  });

  it('draws uniform random bytes from the pool, across refills', () => {
    const counts = new Array<number>(32).fill(0);
    const n = 64_000; // ~16 pool refills
    const seen = new Set<number>();
    for (let i = 0; i < n; i++) {
      const r = pooledRandom();
      expect(r).toBeGreaterThanOrEqual(0);
      expect(r).toBeLessThan(1);
      seen.add(r);
      counts[Math.floor(r * 32)]!++;
    }
    expect(seen.size).toBe(256);
    // Chi-square over 32 buckets (31 degrees of freedom): 70 is far beyond p = 0.0001.
    const expected = n / 32;
    const chi2 = counts.reduce((s, c) => s + (c - expected) ** 2 / expected, 0);
    expect(chi2).toBeLessThan(70);
  });

  it('refills the pool with fresh bytes instead of handing out the same ones again', () => {
    const pool = 4096; // the pool's size in ids.ts
    const first = Array.from({ length: pool }, () => pooledRandom());
    const next = Array.from({ length: pool }, () => pooledRandom());
    // Both windows start at the same place in the pool (whatever it was), so a refill that reused the
    // buffer would make them equal position by position; fresh bytes match at ~1/256 of the positions.
    const same = first.filter((v, k) => v === next[k]).length;
    expect(same).toBeLessThan(pool / 32);
  });

  it('names the id it wanted with the right article', () => {
    expect(idSchema('acct').safeParse('x').error?.issues[0]?.message).toBe('must be an acct_ id');
    expect(idSchema('src').safeParse('x').error?.issues[0]?.message).toBe('must be a src_ id');
  });
});
