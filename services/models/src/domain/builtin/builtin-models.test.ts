import { isId, MAX_BATCH_SERIES_VALUES, modelSchema } from '@dap/contracts';
import { ANOMALY_MODEL_ID, BUILTIN_MODELS, FORECAST_MODEL_ID } from './index.ts';
import { forecastModel } from './forecast.model.ts';
import { anomalyModel } from './anomaly.model.ts';

describe('built-in models', () => {
  it('have fixed, valid mdl_ ids that sort above any time-based id, forecast first', () => {
    expect(BUILTIN_MODELS.map((m) => m.id)).toEqual([FORECAST_MODEL_ID, ANOMALY_MODEL_ID]);
    for (const m of BUILTIN_MODELS) {
      expect(isId('mdl', m.id)).toBe(true);
      expect(m.id > 'mdl_7ZZZZZZZZZ').toBe(true); // the largest 48-bit ULID time
    }
  });

  it('validate inputs and name the bad field by path', () => {
    const errors = (inputs: unknown[]) => {
      const v = forecastModel.runtime.validate(inputs);
      return v.ok ? [] : v.errors;
    };
    expect(errors([{ horizon: 3 }])).toEqual([{ path: 'inputs.0.series', message: expect.stringMatching(/expected array/) }]);
    expect(errors([{ series: [1, 2, 3] }, { series: ['a', 'b', 'c'] }]).map((e) => e.path)).toEqual(['inputs.1.series.0', 'inputs.1.series.1', 'inputs.1.series.2']);
    expect(errors([{ series: [1, 2, 3], horizon: 0 }]).map((e) => e.path)).toEqual(['inputs.0.horizon']);
    expect(errors([{ series: [1, 2, 3], horizon: 2.5 }]).map((e) => e.path)).toEqual(['inputs.0.horizon']);
    expect(errors([{ series: [1, 2] }]).map((e) => e.path)).toEqual(['inputs.0.series']);
    expect(errors([{ series: [1, 2, 3], seasonLength: 1 }]).map((e) => e.path)).toEqual(['inputs.0.seasonLength']);
    expect(errors([{ series: [1, 2, 3], horizon: 3, extra: true }])).toEqual([{ path: 'inputs.0', message: expect.stringMatching(/extra/) }]);
    expect(errors([{ series: [1, 2, 1e300] }]).map((e) => e.path)).toEqual(['inputs.0.series.2']);
  });

  it('cap the error list and the batch total', () => {
    const v = forecastModel.runtime.validate(Array.from({ length: 500 }, () => ({})));
    expect(v.ok).toBe(false);
    if (!v.ok) expect(v.errors).toHaveLength(100);
    const big = Array.from({ length: Math.ceil(MAX_BATCH_SERIES_VALUES / 10_000) + 1 }, () => ({ series: new Array(10_000).fill(1) }));
    const b = anomalyModel.runtime.validate(big);
    expect(b.ok).toBe(false);
    if (!b.ok) expect(b.errors).toEqual([{ path: 'inputs', message: expect.stringMatching(/at most 200000/) }]);
  });

  it('apply defaults and predict one output per input', async () => {
    const v = forecastModel.runtime.validate([{ series: [1, 2, 3, 4, 5] }, { series: [3, 1, 3, 1, 3, 1, 3, 1], horizon: 2, seasonLength: 2 }]);
    expect(v.ok).toBe(true);
    if (!v.ok) return;
    const out = await forecastModel.runtime.predict(v.inputs);
    expect(out).toHaveLength(2);
    expect((out[0]!.forecast as number[]).length).toBe(7);
    expect(out[1]).toMatchObject({ method: 'holt_winters', seasonLength: 2 });
    expect((out[1]!.forecast as number[])[0]).toBeCloseTo(3, 1);
    const a = anomalyModel.runtime.validate([{ series: [1, 1, 1, 1, 1, 1, 1, 9, 1, 1, 1, 1] }]);
    expect(a.ok).toBe(true);
    if (a.ok) expect((await anomalyModel.runtime.predict(a.inputs))[0]).toMatchObject({ anomalies: [{ index: 7, value: 9 }], threshold: 3.5 });
  });

  it('publish an honest synthetic backtest as their evaluation', () => {
    const f = forecastModel.backtest();
    expect(f.kind).toBe('synthetic_backtest');
    expect(f.mae as number).toBeLessThan((f.naiveMae as number) / 2);
    expect(f.coverage95 as number).toBeGreaterThanOrEqual(0.8);
    const a = anomalyModel.backtest();
    expect(a).toMatchObject({ kind: 'synthetic_backtest', precision: 1, recall: 1 });
  });

  it('match the contract schema once mapped', () => {
    for (const m of BUILTIN_MODELS) {
      expect(modelSchema.safeParse({ ...m, createdAt: m.createdAt.toISOString() }).success).toBe(true);
    }
  });
});
