import { isId, newId, pooledRandom } from './ids.ts';

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

  it('never repeats a stretch of draws (the pool is refilled with fresh bytes)', () => {
    const a = Array.from({ length: 5_000 }, () => pooledRandom());
    const b = Array.from({ length: 5_000 }, () => pooledRandom());
    expect(a.join(',')).not.toEqual(b.join(','));
  });
});
