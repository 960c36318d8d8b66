import { forecastSeries } from './holt-winters.ts';
import { seasonalSeries } from './synthetic.ts';

const mae = (actual: number[], predicted: number[]) => actual.reduce((s, y, i) => s + Math.abs(y - predicted[i]!), 0) / actual.length;
const coverage = (actual: number[], lo: number[], hi: number[]) => actual.filter((y, i) => y >= lo[i]! && y <= hi[i]!).length / actual.length;

describe('forecastSeries (Holt-Winters)', () => {
  // Several seeds so one lucky draw cannot carry the assertions.
  const seeds = [1, 2, 3, 4, 5];
  const cases = seeds.map((seed) => {
    const series = seasonalSeries({ length: 132, period: 12, level: 200, slope: 0.8, amplitude: 25, noise: 4, seed });
    const train = series.slice(0, 108);
    const test = series.slice(108);
    return { seed, train, test, result: forecastSeries(train, test.length, 12) };
  });

  it('beats the naive last-value forecast on held-out points of a trending seasonal series', () => {
    for (const { train, test, result } of cases) {
      const naive = test.map(() => train[train.length - 1]!);
      const modelMae = mae(test, result.forecast);
      expect(result.method).toBe('holt_winters');
      expect(modelMae).toBeLessThan(mae(test, naive) / 3);
      // Noise σ is 4, so a good fit's MAE is near 4·√(2/π) ≈ 3.2.
      expect(modelMae).toBeLessThan(6);
    }
  });

  it('has prediction intervals that contain most held-out points, the 95% ones wider than the 80% ones', () => {
    const actual = cases.flatMap((c) => c.test);
    const lo80 = cases.flatMap((c) => c.result.lower80);
    const hi80 = cases.flatMap((c) => c.result.upper80);
    const lo95 = cases.flatMap((c) => c.result.lower95);
    const hi95 = cases.flatMap((c) => c.result.upper95);
    expect(coverage(actual, lo80, hi80)).toBeGreaterThanOrEqual(0.7);
    expect(coverage(actual, lo95, hi95)).toBeGreaterThanOrEqual(0.88);
    for (const { result } of cases) {
      result.forecast.forEach((f, i) => {
        expect(result.lower95[i]!).toBeLessThan(result.lower80[i]!);
        expect(result.lower80[i]!).toBeLessThan(f);
        expect(result.upper80[i]!).toBeGreaterThan(f);
        expect(result.upper95[i]!).toBeGreaterThan(result.upper80[i]!);
      });
      // Uncertainty does not shrink with the horizon.
      const width = (i: number) => result.upper95[i]! - result.lower95[i]!;
      expect(width(23)).toBeGreaterThanOrEqual(width(0));
    }
  });

  it('fits smoothing parameters inside (0, 1)', () => {
    for (const { result } of cases) {
      for (const p of [result.alpha, result.beta, result.gamma!]) {
        expect(p).toBeGreaterThan(0);
        expect(p).toBeLessThan(1);
      }
    }
  });

  it('falls back to Holt linear trend without a season length or with fewer than two seasons', () => {
    const series = [10, 12, 14, 16, 18, 20, 22, 24];
    for (const r of [forecastSeries(series, 3), forecastSeries(series, 3, 5)]) {
      expect(r.method).toBe('holt');
      expect(r.gamma).toBeNull();
      expect(r.seasonLength).toBeNull();
      r.forecast.forEach((f, i) => expect(f).toBeCloseTo(26 + 2 * i, 3));
    }
  });

  it('forecasts a linear trend plus a clean season almost exactly', () => {
    const series = Array.from({ length: 40 }, (_, t) => 5 + 0.5 * t + [3, -1, -2, 0][t % 4]!);
    const r = forecastSeries(series, 8, 4);
    expect(r.method).toBe('holt_winters');
    r.forecast.forEach((f, i) => {
      const t = 40 + i;
      expect(f).toBeCloseTo(5 + 0.5 * t + [3, -1, -2, 0][t % 4]!, 1);
    });
  });

  it('handles the shortest series and returns exactly `horizon` values in every array', () => {
    const r = forecastSeries([1, 2, 4], 5);
    for (const key of ['forecast', 'lower80', 'upper80', 'lower95', 'upper95'] as const) {
      expect(r[key]).toHaveLength(5);
      r[key].forEach((v) => expect(Number.isFinite(v)).toBe(true));
    }
  });

  it('keeps a constant series constant with zero-width intervals', () => {
    const r = forecastSeries([7, 7, 7, 7, 7, 7], 3);
    expect(r.forecast).toEqual([7, 7, 7]);
    expect(r.upper95).toEqual([7, 7, 7]);
  });
});
