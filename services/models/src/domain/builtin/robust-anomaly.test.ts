import { detectAnomalies, median, rollingMedian } from './robust-anomaly.ts';
import { plantedSpikeSeries } from './anomaly.model.ts';
import { mulberry32 } from '@dap/random';
import { gaussian, seasonalSeries } from './synthetic.ts';

describe('detectAnomalies', () => {
  it('finds the spikes planted in a seasonal series, and nothing else', () => {
    const { series, spikes } = plantedSpikeSeries();
    const r = detectAnomalies(series, 3.5, 24);
    expect(r.method).toBe('seasonal_median');
    expect(r.anomalies.map((a) => a.index)).toEqual(spikes);
    expect(r.scores).toHaveLength(series.length);
    for (const a of r.anomalies) {
      expect(a.value).toBe(series[a.index]);
      expect(Math.abs(a.value - a.expected)).toBeGreaterThan(3);
      expect(Math.abs(a.score)).toBeGreaterThan(3.5);
    }
  });

  it('finds spikes and dips on a noisy trend without a season length, and no normal points', () => {
    const normal = gaussian(mulberry32(11));
    const series = Array.from({ length: 300 }, (_, t) => 20 + 0.1 * t + normal());
    const planted = new Map([
      [40, 9],
      [41, -9], // adjacent anomalies
      [150, 12],
      [299, -10], // at the edge
    ]);
    for (const [i, d] of planted) series[i] = series[i]! + d;
    const r = detectAnomalies(series);
    expect(r.method).toBe('rolling_median');
    expect(r.anomalies.map((a) => a.index)).toEqual([...planted.keys()]);
    expect(Math.sign(r.anomalies[1]!.score)).toBe(-1);
  });

  it('flags nothing in a clean seasonal series with noise', () => {
    for (const seed of [1, 2, 3]) {
      const series = seasonalSeries({ length: 200, period: 7, level: 100, slope: 0.2, amplitude: 15, noise: 1, seed });
      expect(detectAnomalies(series, 4.5, 7).anomalies).toEqual([]);
    }
  });

  it('respects the threshold: a lower one flags more', () => {
    const { series } = plantedSpikeSeries();
    expect(detectAnomalies(series, 2, 24).anomalies.length).toBeGreaterThan(detectAnomalies(series, 3.5, 24).anomalies.length);
  });

  it('scores a constant series 0 everywhere, and a single step in one when MAD is 0', () => {
    expect(detectAnomalies([5, 5, 5, 5, 5]).scores).toEqual([0, 0, 0, 0, 0]);
    const r = detectAnomalies([5, 5, 5, 5, 5, 5, 50, 5, 5, 5, 5, 5]);
    expect(r.anomalies.map((a) => a.index)).toEqual([6]);
    r.scores.forEach((s) => expect(Number.isFinite(s)).toBe(true));
  });
});

describe('rollingMedian', () => {
  it('matches a brute-force centred median', () => {
    const u = mulberry32(3);
    const y = Array.from({ length: 50 }, () => Math.round(u() * 20));
    for (const w of [1, 3, 7, 8, 51]) {
      const k = Math.floor(w / 2);
      const brute = y.map((_, t) => median(y.slice(Math.max(0, t - k), t + k + 1)));
      expect(Array.from(rollingMedian(y, w))).toEqual(brute);
      const leaveOut = y.map((_, t) => median([...y.slice(Math.max(0, t - k), t), ...y.slice(t + 1, t + k + 1)]));
      if (w > 1) expect(Array.from(rollingMedian(y, w, { leaveOut: true }))).toEqual(leaveOut);
    }
  });
});
