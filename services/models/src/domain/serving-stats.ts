/** Percentile by linear interpolation between closest ranks (type 7, as numpy and R default to). */
export function percentile(sorted: ArrayLike<number>, p: number): number | null {
  const n = sorted.length;
  if (n === 0) return null;
  const h = (n - 1) * p;
  const lo = Math.floor(h);
  const hi = Math.min(n - 1, lo + 1);
  return sorted[lo]! + (h - lo) * (sorted[hi]! - sorted[lo]!);
}

const round3 = (v: number | null) => (v === null ? null : Math.round(v * 1000) / 1000);

export function latencySummary(latencies: ArrayLike<number>): { p50: number | null; p95: number | null; p99: number | null } {
  const sorted = Float64Array.from(latencies).sort();
  return { p50: round3(percentile(sorted, 0.5)), p95: round3(percentile(sorted, 0.95)), p99: round3(percentile(sorted, 0.99)) };
}
