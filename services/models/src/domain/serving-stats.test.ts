import { latencySummary, percentile } from './serving-stats.ts';

describe('serving stats', () => {
  it('interpolates percentiles between closest ranks', () => {
    const sorted = Float64Array.from({ length: 101 }, (_, i) => i);
    expect(percentile(sorted, 0.5)).toBe(50);
    expect(percentile(sorted, 0.95)).toBe(95);
    expect(percentile([1, 2], 0.5)).toBe(1.5);
    expect(percentile([7], 0.99)).toBe(7);
    expect(percentile([], 0.5)).toBeNull();
  });

  it('summarises unsorted latencies, null when there are none', () => {
    expect(latencySummary([5, 1, 3, 2, 4])).toEqual({ p50: 3, p95: 4.8, p99: 4.96 });
    expect(latencySummary([])).toEqual({ p50: null, p95: null, p99: null });
  });
});
