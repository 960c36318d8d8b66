import { z } from 'zod';
import { MAX_SERIES_LENGTH } from '@dap/contracts';
import { DEFAULT_THRESHOLD, detectAnomalies } from './robust-anomaly.ts';
import { checkSeriesBatch, seasonLengthField, seriesBatchCost, seriesField } from './series-input.ts';
import { mulberry32 } from '@dap/random';
import { gaussian, seasonalSeries } from './synthetic.ts';
import { schemaRuntime } from '../runtime.ts';
import { once, type BuiltinModel } from '../model.ts';

export const ANOMALY_MODEL_ID = 'mdl_7ZZZZZZZZZZZZZZZZZZZZZANMY';

const anomalyInput = z.strictObject({
  series: seriesField,
  threshold: z.number().positive().max(1000).default(DEFAULT_THRESHOLD),
  seasonLength: seasonLengthField,
});

const round = (v: number) => Math.round(v * 1e6) / 1e6;

/**
 * Spikes of ±6σ planted at fixed places in a fixed synthetic seasonal series (seed 7, 240 points, season
 * 24). The normal points' noise is Gaussian clipped at ±2.5σ, so "normal" and "anomalous" are unambiguous.
 */
export function plantedSpikeSeries(): { series: number[]; spikes: number[] } {
  const series = seasonalSeries({ length: 240, period: 24, level: 50, slope: 0.05, amplitude: 8, noise: 1, clip: 2.5, seed: 7 });
  const spikes = [17, 60, 101, 150, 199, 230];
  const sign = gaussian(mulberry32(8));
  for (const i of spikes) series[i] = series[i]! + (sign() >= 0 ? 6 : -6);
  return { series, spikes };
}

function syntheticEvaluation(): Record<string, unknown> {
  const { series, spikes } = plantedSpikeSeries();
  const found = new Set(detectAnomalies(series, DEFAULT_THRESHOLD, 24).anomalies.map((a) => a.index));
  const truePositives = spikes.filter((i) => found.has(i)).length;
  const precision = found.size ? truePositives / found.size : 1;
  const recall = truePositives / spikes.length;
  return {
    kind: 'synthetic_backtest',
    description: 'Fixed evaluation on a synthetic seasonal series with planted spikes (not on your data), at the default threshold.',
    dataset: { length: series.length, seasonLength: 24, noiseStdDev: 1, noiseClippedAt: 2.5, plantedSpikes: spikes.length, spikeSize: 6, seed: 7 },
    detected: found.size,
    precision: round(precision),
    recall: round(recall),
    f1: round(precision + recall ? (2 * precision * recall) / (precision + recall) : 0),
  };
}

export const anomalyModel: BuiltinModel = {
  id: ANOMALY_MODEL_ID,
  name: 'anomaly',
  type: 'robust_zscore',
  kind: 'builtin',
  status: 'ready',
  version: 1,
  description:
    'Finds anomalies in a series: each value is compared with a robust baseline (a rolling median, plus a median seasonal profile ' +
    'when a season length is given) and scored with the modified z-score (median and MAD). Values scoring above the threshold are anomalies.',
  features: [
    { name: 'series', type: 'number[]', description: `The observed values, oldest first: 3 to ${MAX_SERIES_LENGTH} finite numbers.` },
    { name: 'threshold', type: 'number', description: `Absolute modified z-score above which a value is an anomaly (default ${DEFAULT_THRESHOLD}).` },
    { name: 'seasonLength', type: 'integer', description: 'Optional season length in steps: 2 to 365; used when the series holds two full seasons.' },
  ],
  createdAt: new Date('2025-01-01T00:00:00.000Z'),
  runtime: schemaRuntime({
    input: anomalyInput,
    checkBatch: checkSeriesBatch,
    cost: seriesBatchCost,
    predictOne: (input) => {
      const r = detectAnomalies(input.series, input.threshold, input.seasonLength);
      return { anomalies: r.anomalies, scores: r.scores, method: r.method, window: r.window, seasonLength: r.seasonLength, threshold: r.threshold };
    },
  }),
  backtest: once(syntheticEvaluation),
};
