/** Small, exact statistics over recorded samples (no histogram bucketing, so sub-millisecond values survive). */

export interface LatencySummary {
  count: number;
  mean: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

/** The q-quantile (0..1) of ascending-sorted values, nearest-rank (the value a sample actually took). */
export function quantileSorted(sorted: ArrayLike<number>, q: number): number {
  if (sorted.length === 0) return NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[rank]!;
}

export function summarize(values: ArrayLike<number>): LatencySummary {
  const sorted = Float64Array.from(values).sort();
  let sum = 0;
  for (const v of sorted) sum += v;
  return {
    count: sorted.length,
    mean: sorted.length ? sum / sorted.length : NaN,
    p50: quantileSorted(sorted, 0.5),
    p90: quantileSorted(sorted, 0.9),
    p99: quantileSorted(sorted, 0.99),
    max: sorted.length ? sorted[sorted.length - 1]! : NaN,
  };
}

/** The median of repetition results (the middle one, or the mean of the two middle ones). */
export function median(values: number[]): number {
  const finite = values.filter((v) => Number.isFinite(v)).sort((a, b) => a - b);
  if (!finite.length) return NaN;
  const mid = finite.length >> 1;
  return finite.length % 2 ? finite[mid]! : (finite[mid - 1]! + finite[mid]!) / 2;
}

/** Rounds for reports: 3 significant digits below 100, whole numbers above. */
export function round(v: number, digits = 3): number {
  if (!Number.isFinite(v)) return v;
  if (Math.abs(v) >= 100) return Math.round(v);
  return Number(v.toPrecision(digits));
}

/** A growable Float64 buffer, so millions of latencies cost no per-sample allocation. */
export class Samples {
  private buf = new Float64Array(1024);
  length = 0;

  push(v: number): void {
    if (this.length === this.buf.length) {
      const next = new Float64Array(this.buf.length * 2);
      next.set(this.buf);
      this.buf = next;
    }
    this.buf[this.length++] = v;
  }

  values(): Float64Array {
    return this.buf.subarray(0, this.length);
  }
}

/** Largest number of timestamps inside any half-open window (t - windowMs, t]; timestamps need not be sorted. */
export function maxInSlidingWindow(timestamps: number[], windowMs: number): { max: number; at: number } {
  const t = [...timestamps].sort((a, b) => a - b);
  let best = { max: 0, at: NaN };
  let lo = 0;
  for (let hi = 0; hi < t.length; hi++) {
    while (t[lo]! <= t[hi]! - windowMs) lo++;
    const n = hi - lo + 1;
    if (n > best.max) best = { max: n, at: t[hi]! };
  }
  return best;
}
