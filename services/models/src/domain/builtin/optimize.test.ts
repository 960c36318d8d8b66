import { nelderMead } from './optimize.ts';

describe('nelderMead', () => {
  it('finds the minimum of a bowl inside the box', () => {
    const r = nelderMead((x) => (x[0]! - 0.3) ** 2 + 2 * (x[1]! - 0.7) ** 2 + (x[2]! - 0.05) ** 2, [0.5, 0.5, 0.5], { lo: 0, hi: 1, maxEvaluations: 500 });
    expect(r.x[0]).toBeCloseTo(0.3, 3);
    expect(r.x[1]).toBeCloseTo(0.7, 3);
    expect(r.x[2]).toBeCloseTo(0.05, 3);
  });

  it('stays in the box when the minimum lies outside it, and respects the evaluation cap', () => {
    const r = nelderMead((x) => (x[0]! - 3) ** 2 + (x[1]! + 2) ** 2, [0.5, 0.5], { lo: 0, hi: 1, maxEvaluations: 60 });
    expect(r.x[0]).toBeCloseTo(1, 3);
    expect(r.x[1]).toBeCloseTo(0, 3);
    expect(r.evaluations).toBeLessThanOrEqual(62);
  });
});
