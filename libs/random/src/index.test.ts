import { mulberry32 } from './index.ts';

describe('mulberry32', () => {
  it('gives the same sequence for the same seed, in [0, 1)', () => {
    const a = mulberry32(42);
    const b = mulberry32(42);
    const xs = Array.from({ length: 1_000 }, () => a());
    expect(Array.from({ length: 1_000 }, () => b())).toEqual(xs);
    expect(xs.every((x) => x >= 0 && x < 1)).toBe(true);
    // A fixed value for seed 42, so a change to the generator (and so to every seeded split) shows.
    expect(mulberry32(42)()).toBeCloseTo(0.6011037519201636, 15);
  });

  it('gives another sequence for another seed', () => {
    expect(mulberry32(1)()).not.toBe(mulberry32(2)());
  });
});
