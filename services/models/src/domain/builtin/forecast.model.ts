import { z } from 'zod';
import { MAX_SERIES_LENGTH } from '@dap/contracts';
import { forecastSeries, type ForecastResult } from './holt-winters.ts';
import { checkSeriesBatch, seasonLengthField, seriesBatchCost, seriesField } from './series-input.ts';
import { seasonalSeries } from './synthetic.ts';
import { schemaRuntime } from '../runtime.ts';
import { once, type BuiltinModel } from '../model.ts';

export const FORECAST_MODEL_ID = 'mdl_7ZZZZZZZZZZZZZZZZZZZZZFCST';

const forecastInput = z.strictObject({
  series: seriesField,
  horizon: z.number().int().min(1).max(365).default(7),
  seasonLength: seasonLengthField,
});

const round = (v: number) => Math.round(v * 1e6) / 1e6;

/**
 * Backtest on a fixed synthetic series (seed 42: level 100, slope 0.5, a 12-step season of amplitude 10,
 * Gaussian noise σ 2, 144 points): fit on the first 120, forecast the last 24, compare with naive forecasts.
 */
function syntheticBacktest(): Record<string, unknown> {
  const series = seasonalSeries({ length: 144, period: 12, level: 100, slope: 0.5, amplitude: 10, noise: 2, seed: 42 });
  const train = series.slice(0, 120);
  const test = series.slice(120);
  const f = forecastSeries(train, test.length, 12);
  const mae = (pred: (i: number) => number) => test.reduce((s, y, i) => s + Math.abs(y - pred(i)), 0) / test.length;
  const within = (lo: number[], hi: number[]) => test.filter((y, i) => y >= lo[i]! && y <= hi[i]!).length / test.length;
  return {
    kind: 'synthetic_backtest',
    description: 'Fixed hold-out backtest on a synthetic seasonal series (not on your data): trained on 120 points, scored on the next 24.',
    dataset: { length: 144, trainLength: 120, horizon: 24, seasonLength: 12, noiseStdDev: 2, seed: 42 },
    mae: round(mae((i) => f.forecast[i]!)),
    rmse: round(Math.sqrt(test.reduce((s, y, i) => s + (y - f.forecast[i]!) ** 2, 0) / test.length)),
    naiveMae: round(mae(() => train[train.length - 1]!)),
    seasonalNaiveMae: round(mae((i) => train[train.length - 12 + (i % 12)]!)),
    coverage80: round(within(f.lower80, f.upper80)),
    coverage95: round(within(f.lower95, f.upper95)),
  };
}

export const forecastModel: BuiltinModel = {
  id: FORECAST_MODEL_ID,
  name: 'forecast',
  type: 'holt_winters',
  kind: 'builtin',
  status: 'ready',
  version: 1,
  description:
    'Forecasts a series with Holt-Winters exponential smoothing (additive trend and seasonality; Holt linear trend when no season ' +
    'length is given or the series is shorter than two seasons). Smoothing parameters are fitted by minimising the one-step-ahead ' +
    'squared error. Returns point forecasts with 80% and 95% prediction intervals.',
  features: [
    { name: 'series', type: 'number[]', description: `The observed values, oldest first: 3 to ${MAX_SERIES_LENGTH} finite numbers.` },
    { name: 'horizon', type: 'integer', description: 'How many steps ahead to forecast: 1 to 365 (default 7).' },
    { name: 'seasonLength', type: 'integer', description: 'Optional season length in steps: 2 to 365 (e.g. 7 for daily data with a weekly cycle).' },
  ],
  createdAt: new Date('2025-01-01T00:00:00.000Z'),
  runtime: schemaRuntime({
    input: forecastInput,
    checkBatch: checkSeriesBatch,
    cost: seriesBatchCost,
    predictOne: (input) => forecastOutput(forecastSeries(input.series, input.horizon, input.seasonLength)),
    explainOne: (input) => {
      const r = forecastSeries(input.series, input.horizon, input.seasonLength, true);
      const c = r.components!;
      return {
        ...forecastOutput(r),
        explanation: {
          method: 'components',
          description: 'Each forecast[h] = level[h] + trend[h] + season[h] exactly; residual holds the one-step-ahead errors of the fit over the series, from index residualStart.',
          level: c.level,
          trend: c.trend,
          season: c.season,
          residual: c.residual,
          residualStart: c.residualStart,
        },
      };
    },
  }),
  backtest: once(syntheticBacktest),
};

function forecastOutput(r: ForecastResult): Record<string, unknown> {
  return {
    forecast: r.forecast,
    lower80: r.lower80,
    upper80: r.upper80,
    lower95: r.lower95,
    upper95: r.upper95,
    alpha: r.alpha,
    beta: r.beta,
    gamma: r.gamma,
    method: r.method,
    seasonLength: r.seasonLength,
    residualStdDev: r.residualStdDev,
  };
}
