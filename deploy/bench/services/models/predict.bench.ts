import { BUILTIN_MODELS, FORECAST_MODEL_ID } from '../../../../services/models/src/domain/builtin/index.ts';
import { seasonalSeries } from '../../../../services/models/src/domain/builtin/synthetic.ts';
import { percentile } from '../../../../services/models/src/domain/serving-stats.ts';

/**
 * "Single prediction, in process": the built-in forecast model's validate + predict for one input, timed
 * call by call with performance.now(), no HTTP, no logging. The input is a fixed seasonal series (seed 7),
 * so runs are comparable. Run directly to print JSON:
 *   node --no-warnings deploy/bench/services/models/predict.bench.ts [calls]
 */
export interface PredictBenchOptions {
  calls?: number;
  warmup?: number;
  seriesLength?: number;
  seasonLength?: number;
  horizon?: number;
}

export interface PredictBenchResult {
  model: string;
  input: { seriesLength: number; seasonLength: number; horizon: number };
  calls: number;
  warmup: number;
  p50Ms: number;
  p99Ms: number;
  meanMs: number;
  maxMs: number;
}

const round = (v: number) => Math.round(v * 1000) / 1000;

export async function benchForecastPredict(opts: PredictBenchOptions = {}): Promise<PredictBenchResult> {
  const calls = opts.calls ?? 2000;
  const warmup = opts.warmup ?? 200;
  const seriesLength = opts.seriesLength ?? 96;
  const seasonLength = opts.seasonLength ?? 12;
  const horizon = opts.horizon ?? 7;
  const model = BUILTIN_MODELS.find((m) => m.id === FORECAST_MODEL_ID)!;
  const series = seasonalSeries({ length: seriesLength, period: seasonLength, level: 100, slope: 0.3, amplitude: 8, noise: 1.5, seed: 7 });
  const input = [{ series, horizon, seasonLength }];

  const once = async () => {
    const v = model.runtime.validate(input);
    if (!v.ok) throw new Error(`the benchmark input is invalid: ${JSON.stringify(v.errors)}`);
    const out = await model.runtime.predict(v.inputs);
    if (out.length !== 1) throw new Error('expected one prediction');
  };
  for (let i = 0; i < warmup; i++) await once();
  const times = new Float64Array(calls);
  for (let i = 0; i < calls; i++) {
    const t = performance.now();
    await once();
    times[i] = performance.now() - t;
  }
  times.sort();
  return {
    model: 'forecast (Holt-Winters, fitted per call)',
    input: { seriesLength, seasonLength, horizon },
    calls,
    warmup,
    p50Ms: round(percentile(times, 0.5)!),
    p99Ms: round(percentile(times, 0.99)!),
    meanMs: round(times.reduce((s, v) => s + v, 0) / calls),
    maxMs: round(times[calls - 1]!),
  };
}

// No top-level await: the file may be imported by a CommonJS runner (jest).
if (process.argv[1]?.endsWith('predict.bench.ts')) {
  void benchForecastPredict({ calls: Number(process.argv[2] ?? 2000) }).then((r) => process.stdout.write(`${JSON.stringify(r, null, 2)}\n`));
}
