/**
 * Anomaly detection with robust statistics only, so the anomalies themselves cannot drag the baseline:
 *  - baseline without a season: the median of the point's neighbours (a centred window of 7, the point
 *    itself left out, so a point never explains itself and the residual scale is not understated);
 *  - with a season length and at least two full seasons, a two-pass median decomposition: a rolling median
 *    over one season gives a first level, the median of each phase's detrended values the seasonal profile,
 *    and the neighbours' median of the deseasonalised series the final level; expected = level + profile;
 *  - score: the modified z-score of each residual, 0.6745·(r − median(r)) / MAD(r) (Iglewicz & Hoaglin,
 *    whose recommended cut-off 3.5 is the default threshold). When MAD is 0 the mean absolute deviation
 *    stands in (scaled by 1.2533, as IBM SPSS Modeler does); when that is 0 too, every score is 0.
 */
export interface Anomaly {
  index: number;
  value: number;
  expected: number;
  score: number;
}

export interface AnomalyResult {
  anomalies: Anomaly[];
  scores: number[];
  expected: number[];
  method: 'seasonal_median' | 'rolling_median';
  window: number;
  seasonLength: number | null;
  threshold: number;
}

export const DEFAULT_THRESHOLD = 3.5;
const MIN_WINDOW = 7;

export function median(values: ArrayLike<number>): number {
  const sorted = Float64Array.from(values as ArrayLike<number>).sort();
  return medianOfSorted(sorted);
}

function medianOfSorted(sorted: ArrayLike<number>): number {
  const len = sorted.length;
  if (len === 0) return NaN;
  const mid = len >> 1;
  return len % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

function lowerBound(window: number[], v: number): number {
  let lo = 0;
  let hi = window.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (window[mid]! < v) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

const insertSorted = (window: number[], v: number) => void window.splice(lowerBound(window, v), 0, v);
const removeSorted = (window: number[], v: number) => void window.splice(lowerBound(window, v), 1);

/**
 * Centred rolling median, O(n·w) with a sorted window. At the edges the window either shrinks (`shrink`)
 * or keeps its full width by sliding inwards (`shift`, which keeps every phase of a season in it).
 * `leaveOut` excludes the centre point from its own window.
 */
export function rollingMedian(y: readonly number[], width: number, opts: { edges?: 'shrink' | 'shift'; leaveOut?: boolean } = {}): Float64Array {
  const n = y.length;
  const w = Math.min(width, n);
  const k = Math.floor(w / 2);
  const out = new Float64Array(n);
  const window: number[] = [];
  let lo = 0;
  let hi = -1;
  for (let t = 0; t < n; t++) {
    let wantLo = Math.max(0, t - k);
    let wantHi = Math.min(n - 1, t + k);
    if (opts.edges === 'shift') {
      wantLo = Math.min(wantLo, n - w);
      wantHi = wantLo + w - 1;
    }
    while (hi < wantHi) insertSorted(window, y[++hi]!);
    while (lo < wantLo) removeSorted(window, y[lo++]!);
    if (opts.leaveOut && window.length > 1) {
      removeSorted(window, y[t]!);
      out[t] = medianOfSorted(window);
      insertSorted(window, y[t]!);
    } else {
      out[t] = medianOfSorted(window);
    }
  }
  return out;
}

function phaseProfile(y: readonly number[], level: Float64Array, m: number): Float64Array {
  const profile = new Float64Array(m);
  const values: number[] = [];
  for (let p = 0; p < m; p++) {
    values.length = 0;
    for (let t = p; t < y.length; t += m) values.push(y[t]! - level[t]!);
    profile[p] = median(values);
  }
  return profile;
}

const odd = (w: number) => (w % 2 ? w : w + 1);

export function detectAnomalies(series: readonly number[], threshold = DEFAULT_THRESHOLD, seasonLength?: number): AnomalyResult {
  const n = series.length;
  const seasonal = seasonLength !== undefined && seasonLength >= 2 && n >= 2 * seasonLength;
  const m = seasonal ? seasonLength : 0;
  const window = odd(Math.max(m, MIN_WINDOW));
  const expected = new Float64Array(n);

  if (seasonal) {
    const firstLevel = rollingMedian(series, odd(m), { edges: 'shift' });
    const firstProfile = phaseProfile(series, firstLevel, m);
    const deseasonalised = series.map((y, t) => y - firstProfile[t % m]!);
    const level = rollingMedian(deseasonalised, window, { leaveOut: true });
    const profile = phaseProfile(series, level, m);
    for (let t = 0; t < n; t++) expected[t] = level[t]! + profile[t % m]!;
  } else {
    expected.set(rollingMedian(series, window, { leaveOut: true }));
  }

  const residuals = new Float64Array(n);
  for (let t = 0; t < n; t++) residuals[t] = series[t]! - expected[t]!;
  const center = median(residuals);
  const deviations = residuals.map((r) => Math.abs(r - center));
  const mad = median(deviations);
  const scale = mad > 0 ? mad / 0.6745 : (deviations.reduce((s, v) => s + v, 0) / n) * 1.253314;

  const scores: number[] = new Array(n);
  const anomalies: Anomaly[] = [];
  for (let t = 0; t < n; t++) {
    const score = scale > 0 ? (residuals[t]! - center) / scale : 0;
    scores[t] = score;
    if (Math.abs(score) > threshold) anomalies.push({ index: t, value: series[t]!, expected: expected[t]!, score });
  }
  return {
    anomalies,
    scores,
    expected: Array.from(expected),
    method: seasonal ? 'seasonal_median' : 'rolling_median',
    window: Math.min(window, n),
    seasonLength: seasonal ? m : null,
    threshold,
  };
}
