import { nelderMead } from './optimize.ts';

/**
 * Exponential smoothing forecasts: Holt–Winters with additive trend and additive seasonality when a season
 * length is given and the series holds at least two full seasons, otherwise Holt's linear trend. The
 * smoothing parameters minimise the one-step-ahead SSE (coarse grid, then bounded Nelder–Mead). Prediction
 * intervals use the residual standard deviation, widened with the horizon by the ETS(A,A,A) / ETS(A,A,N)
 * variance multipliers (Hyndman & Athanasopoulos, "Forecasting: Principles and Practice", §8.7).
 */
export interface ForecastResult {
  forecast: number[];
  lower80: number[];
  upper80: number[];
  lower95: number[];
  upper95: number[];
  alpha: number;
  beta: number;
  gamma: number | null;
  method: 'holt_winters' | 'holt';
  seasonLength: number | null;
  /** Root mean square of the one-step-ahead residuals of the fitted model. */
  residualStdDev: number;
  /** With `decompose`: each forecast as level + trend + season (exactly), and the in-sample residuals. */
  components?: ForecastComponents;
}

export interface ForecastComponents {
  /** The final smoothed level, the same for every step. */
  level: number[];
  /** h times the final trend, per step h. */
  trend: number[];
  /** The seasonal index of each step (0 for Holt). */
  season: number[];
  /** One-step-ahead errors of the fitted model over the series (from the first step it forecasts). */
  residual: number[];
  /** Index in the series of residual[0]. */
  residualStart: number;
}

const Z80 = 1.2815515655446004;
const Z95 = 1.959963984540054;
const LO = 1e-4;
const HI = 1 - 1e-4;
const MAX_EVALUATIONS = 160;

interface Fit {
  sse: number;
  residuals: number;
  level: number;
  trend: number;
  season: Float64Array;
}

interface SeasonalStart {
  level: number;
  trend: number;
  season: Float64Array;
}

/** Initial states from the complete seasons: per-season means give level and slope, detrended phases the seasonal indices. */
function seasonalStart(y: readonly number[], m: number): SeasonalStart {
  const seasons = Math.floor(y.length / m);
  const means = new Float64Array(seasons);
  for (let k = 0; k < seasons; k++) {
    let s = 0;
    for (let i = 0; i < m; i++) s += y[k * m + i]!;
    means[k] = s / m;
  }
  const trend = seasons >= 2 ? (means[seasons - 1]! - means[0]!) / ((seasons - 1) * m) : 0;
  const season = new Float64Array(m);
  for (let i = 0; i < m; i++) {
    let s = 0;
    for (let k = 0; k < seasons; k++) s += y[k * m + i]! - (means[k]! + trend * (i - (m - 1) / 2));
    season[i] = s / seasons;
  }
  let mean = 0;
  for (let i = 0; i < m; i++) mean += season[i]!;
  mean /= m;
  for (let i = 0; i < m; i++) season[i] = season[i]! - mean;
  return { level: means[0]! + (trend * (m - 1)) / 2, trend, season };
}

function runHoltWinters(y: readonly number[], m: number, start: SeasonalStart, alpha: number, beta: number, gamma: number, errors?: number[]): Fit {
  const season = Float64Array.from(start.season);
  let level = start.level;
  let trend = start.trend;
  let sse = 0;
  for (let t = m; t < y.length; t++) {
    const p = t % m;
    const s = season[p]!;
    const yt = y[t]!;
    const e = yt - (level + trend + s);
    errors?.push(e);
    sse += e * e;
    const next = alpha * (yt - s) + (1 - alpha) * (level + trend);
    trend = beta * (next - level) + (1 - beta) * trend;
    level = next;
    season[p] = gamma * (yt - level) + (1 - gamma) * s;
  }
  return { sse, residuals: y.length - m, level, trend, season };
}

function runHolt(y: readonly number[], alpha: number, beta: number, errors?: number[]): Fit {
  let level = y[0]!;
  let trend = y[1]! - y[0]!;
  let sse = 0;
  for (let t = 1; t < y.length; t++) {
    const yt = y[t]!;
    const e = yt - (level + trend);
    if (t >= 2) errors?.push(e);
    if (t >= 2) sse += e * e; // the first step is fitted exactly by the initial trend
    const next = alpha * yt + (1 - alpha) * (level + trend);
    trend = beta * (next - level) + (1 - beta) * trend;
    level = next;
  }
  return { sse, residuals: Math.max(1, y.length - 2), level, trend, season: new Float64Array(0) };
}

/** The best point of a small grid, then Nelder–Mead from there. */
function fitParameters(objective: (x: readonly number[]) => number, grid: number[][]): number[] {
  let best = grid[0]!;
  let bestValue = Infinity;
  for (const x of grid) {
    const v = objective(x);
    if (v < bestValue) {
      bestValue = v;
      best = x;
    }
  }
  const refined = nelderMead(objective, best, { lo: LO, hi: HI, step: 0.05, maxEvaluations: MAX_EVALUATIONS });
  return refined.value <= bestValue ? refined.x : best;
}

const ALPHAS = [0.1, 0.3, 0.5, 0.7, 0.9];
const BETAS = [0.01, 0.1, 0.3];
const GAMMAS = [0.05, 0.2, 0.5];
const HOLT_GRID = ALPHAS.flatMap((a) => BETAS.map((b) => [a, b]));
const HW_GRID = ALPHAS.flatMap((a) => BETAS.flatMap((b) => GAMMAS.map((g) => [a, b, g])));

export function forecastSeries(series: readonly number[], horizon: number, seasonLength?: number, decompose = false): ForecastResult {
  if (series.length < 3) throw new RangeError('a series needs at least 3 values');
  const seasonal = seasonLength !== undefined && seasonLength >= 2 && series.length >= 2 * seasonLength;
  const m = seasonal ? seasonLength : 0;

  let alpha: number;
  let beta: number;
  let gamma: number | null;
  let fit: Fit;
  const errors: number[] | undefined = decompose ? [] : undefined;
  if (seasonal) {
    const start = seasonalStart(series, m);
    [alpha, beta, gamma] = fitParameters((x) => runHoltWinters(series, m, start, x[0]!, x[1]!, x[2]!).sse, HW_GRID) as [number, number, number];
    fit = runHoltWinters(series, m, start, alpha, beta, gamma, errors);
  } else {
    [alpha, beta] = fitParameters((x) => runHolt(series, x[0]!, x[1]!).sse, HOLT_GRID) as [number, number];
    gamma = null;
    fit = runHolt(series, alpha, beta, errors);
  }

  const sigma = Math.sqrt(fit.sse / fit.residuals);
  const out: ForecastResult = {
    forecast: [],
    lower80: [],
    upper80: [],
    lower95: [],
    upper95: [],
    alpha,
    beta,
    gamma,
    method: seasonal ? 'holt_winters' : 'holt',
    seasonLength: seasonal ? m : null,
    residualStdDev: sigma,
  };
  const n = series.length;
  const parts: ForecastComponents | undefined = errors ? { level: [], trend: [], season: [], residual: errors, residualStart: seasonal ? m : 2 } : undefined;
  let multiplier = 1; // 1 + Σ_{j<h} c_j²
  for (let h = 1; h <= horizon; h++) {
    if (h > 1) {
      const j = h - 1;
      const c = alpha * (1 + j * beta) + (seasonal && j % m === 0 ? gamma! * (1 - alpha) : 0);
      multiplier += c * c;
    }
    const seasonPart = seasonal ? fit.season[(n - 1 + h) % m]! : 0;
    const point = fit.level + h * fit.trend + seasonPart;
    if (parts) {
      parts.level.push(fit.level);
      parts.trend.push(h * fit.trend);
      parts.season.push(seasonPart);
    }
    const sd = sigma * Math.sqrt(multiplier);
    out.forecast.push(point);
    out.lower80.push(point - Z80 * sd);
    out.upper80.push(point + Z80 * sd);
    out.lower95.push(point - Z95 * sd);
    out.upper95.push(point + Z95 * sd);
  }
  if (parts) out.components = parts;
  return out;
}
