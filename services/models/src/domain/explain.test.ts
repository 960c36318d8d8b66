import { forecastModel } from './builtin/forecast.model.ts';
import { seasonalSeries } from './builtin/synthetic.ts';
import type { ModelRecord } from './model.ts';
import { trainedRuntime, type FeatureRecord } from './trained-runtime.ts';
import { linearRows, separableRows, tableOf } from './training/synthetic-data.ts';
import { trainModel } from './training/train.ts';
import { encodeRecord } from './training/encoding.ts';

const limits = { maxClasses: 50, silhouetteSample: 500 };
const common = { seed: 3, testFraction: 0.2, maxCategories: 20 };

/** |a − b| within 1e-9 of the larger magnitude (and of 1, for values near 0). */
const close = (a: number, b: number) => Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(a), Math.abs(b));

type Kind = 'numeric' | 'categorical';

/** A training spec written as `{ name: kind }`: the one target, then the features in order. */
function specOf<T extends string, H>(type: T, target: Record<string, Kind>, features: Record<string, Kind>, hyperparameters: H) {
  const [[name, kind]] = Object.entries(target) as [[string, Kind]];
  return { type, target: { name, kind }, features: Object.entries(features).map(([name, kind]) => ({ name, kind })), hyperparameters };
}

/** A trained model's record whose input features are the training spec's: numeric ones numbers, categorical ones strings. */
function record(features: readonly { name: string; kind: 'numeric' | 'categorical' }[]): ModelRecord {
  return {
    id: 'mdl_x',
    name: 'x',
    type: 't',
    kind: 'trained',
    status: 'ready',
    version: 1,
    description: '',
    features: features.map((f) => ({ name: f.name, type: f.kind === 'numeric' ? 'number' : 'string', description: '' })),
    createdAt: new Date(),
  };
}

interface Explained {
  prediction: unknown;
  probabilities?: Record<string, number>;
  explanation: { method: string; space: string; class?: unknown; baseValue: number; value: number; contributions: Record<string, number> };
}

describe('exact explanations', () => {
  it('linear regression: base + contributions = the prediction, per feature, measured from the training mean and the reference category', async () => {
    const rows = linearRows(400, 8);
    const spec = specOf('linear_regression', { y: 'numeric' }, { x1: 'numeric', x2: 'numeric', colour: 'categorical' }, common);
    const out = await trainModel(spec, tableOf(rows), limits);
    const runtime = trainedRuntime(record(spec.features), out.artifact);
    const inputs: FeatureRecord[] = rows.slice(0, 50).map((r) => ({ x1: r.x1!, x2: r.x2!, colour: r.colour! }));
    inputs.push({ x1: null, x2: 1e6, colour: 'unseen' });
    const plain = runtime.predict(inputs) as { prediction: number }[];
    const explained = runtime.explain!(inputs) as unknown as Explained[];
    explained.forEach((e, i) => {
      const { baseValue, value, contributions } = e.explanation;
      expect(e.explanation).toMatchObject({ method: 'exact_linear', space: 'prediction' });
      expect(Object.keys(contributions)).toEqual(['x1', 'x2', 'colour']);
      expect(e.prediction).toBe(plain[i]!.prediction);
      expect(value).toBe(e.prediction);
      const sum = baseValue + contributions.x1! + contributions.x2! + contributions.colour!;
      expect(close(sum, e.prediction as number)).toBe(true);
    });
    // The truth is 2·x1 and {blue: 0, red: 4}: a missing x1 (the training mean) adds nothing, blue (the reference) nothing, red ≈ 4.
    const last = explained.at(-1)!.explanation.contributions;
    expect(last.x1).toBe(0);
    const blue = explained.find((_, i) => inputs[i]!.colour === 'blue')!.explanation.contributions.colour;
    const red = explained.find((_, i) => inputs[i]!.colour === 'red')!.explanation.contributions.colour;
    expect(blue).toBe(0);
    expect(red).toBeCloseTo(4, 0);
    const i = inputs.findIndex((x) => (x.x1 as number) > 2);
    expect(explained[i]!.explanation.contributions.x1).toBeGreaterThan(0);
  });

  it('logistic regression: the same in log-odds space of the predicted class, and it agrees with the probabilities', async () => {
    const rows = separableRows(450, 9).map((r, i) => ({
      a: r.a!,
      b: r.b!,
      noise: r.noise!,
      cls: (r.a as number) < -0.7 ? 'low' : (r.a as number) < 0.7 ? 'mid' : 'high',
      tag: ['p', 'q', 'q'][i % 3]!,
    }));
    const spec = specOf('logistic_regression', { cls: 'categorical' }, { a: 'numeric', b: 'numeric', tag: 'categorical' }, { ...common, learningRate: 1, maxIterations: 500 });
    const out = await trainModel(spec, tableOf(rows), limits);
    const runtime = trainedRuntime(record(spec.features), out.artifact);
    const inputs: FeatureRecord[] = rows.slice(0, 60).map((r) => ({ a: r.a!, b: r.b!, tag: r.tag }));
    const explained = runtime.explain!(inputs) as unknown as Explained[];
    const sigmoid = (z: number) => 1 / (1 + Math.exp(-z));
    for (const e of explained) {
      const { baseValue, value, contributions } = e.explanation;
      expect(e.explanation).toMatchObject({ method: 'exact_linear', space: 'log_odds', class: e.prediction });
      expect(close(baseValue + contributions.a! + contributions.b! + contributions.tag!, value)).toBe(true);
      // The predicted class's probability is sigmoid(value) over the sum of every class's one-vs-rest score.
      const x = encodeRecord(out.artifact.encoder, (n) => inputs[explained.indexOf(e)]![n], []);
      const weights = (out.artifact.params as { weights: number[][] }).weights;
      const total = weights.reduce((s, w) => s + sigmoid(x.reduce((t, v, c) => t + w[c]! * v, w[x.length]!)), 0);
      expect(e.probabilities![String(e.prediction)]).toBeCloseTo(sigmoid(value) / total, 8);
      expect(e.probabilities![String(e.prediction)]).toBe(Math.max(...Object.values(e.probabilities!)));
    }
    // "high" is a > 0.7: its log-odds rise with a, so a large a pushes towards it (a positive contribution).
    const high = explained.find((e, i) => e.prediction === 'high' && (inputs[i]!.a as number) > 1.2)!;
    expect(high.explanation.contributions.a).toBeGreaterThan(0);
  });

  it('random forests: base + path contributions = the regressor’s prediction and the classifier’s probability of its class', async () => {
    const rows = separableRows(400, 4).map((r) => ({ a: r.a!, b: r.b!, noise: r.noise!, y: (r.a as number) ** 2 + Math.sin(3 * (r.b as number)), label: r.label! }));
    const features = [
      { name: 'a', kind: 'numeric' as const },
      { name: 'b', kind: 'numeric' as const },
    ];
    const hp = { ...common, nEstimators: 8, maxDepth: 6, maxFeatures: 1, minSamplesLeaf: 3, sampleRows: 300 };
    const inputs: FeatureRecord[] = rows.slice(0, 40).map((r) => ({ a: r.a, b: r.b }));

    const reg = await trainModel({ type: 'random_forest_regressor', target: { name: 'y', kind: 'numeric' }, features, hyperparameters: hp }, tableOf(rows), limits);
    const tree = (reg.artifact.params as { trees: { cover?: number[]; left: number[]; right: number[] }[] }).trees[0]!;
    expect(tree.cover![0]).toBe(Math.min(300, reg.rows.train));
    expect(tree.cover![tree.left[0]!]! + tree.cover![tree.right[0]!]!).toBe(tree.cover![0]);
    const regRuntime = trainedRuntime(record(features), reg.artifact);
    const plain = regRuntime.predict(inputs) as { prediction: number }[];
    (regRuntime.explain!(inputs) as unknown as Explained[]).forEach((e, i) => {
      const { baseValue, value, contributions } = e.explanation;
      expect(e.explanation).toMatchObject({ method: 'tree_path', space: 'prediction' });
      expect(e.prediction).toBe(plain[i]!.prediction);
      expect(close(value, plain[i]!.prediction)).toBe(true);
      expect(close(baseValue + contributions.a! + contributions.b!, plain[i]!.prediction)).toBe(true);
    });

    const cls = await trainModel({ type: 'random_forest_classifier', target: { name: 'label', kind: 'categorical' }, features, hyperparameters: hp }, tableOf(rows), limits);
    const clsRuntime = trainedRuntime(record(features), cls.artifact);
    for (const e of clsRuntime.explain!(inputs) as unknown as Explained[]) {
      const { baseValue, value, contributions } = e.explanation;
      expect(e.explanation).toMatchObject({ method: 'tree_path', space: 'probability', class: e.prediction });
      expect(Math.abs(value - e.probabilities![String(e.prediction)]!)).toBeLessThanOrEqual(1e-9); // probabilities are shown to 9 decimals
      expect(close(baseValue + contributions.a! + contributions.b!, value)).toBe(true);
    }
  });

  it('forecast: level + trend + season = each forecast, with the residuals of the fit', () => {
    const series = seasonalSeries({ length: 60, period: 12, level: 50, slope: 0.3, amplitude: 5, noise: 1, seed: 5 });
    const [e] = forecastModel.runtime.explain!([{ series, horizon: 10, seasonLength: 12 }]) as {
      forecast: number[];
      explanation: { level: number[]; trend: number[]; season: number[]; residual: number[]; residualStart: number };
    }[];
    const [plain] = forecastModel.runtime.predict([{ series, horizon: 10, seasonLength: 12 }]) as { forecast: number[] }[];
    expect(e!.forecast).toEqual(plain!.forecast);
    e!.forecast.forEach((f, h) => expect(close(e!.explanation.level[h]! + e!.explanation.trend[h]! + e!.explanation.season[h]!, f)).toBe(true));
    expect(e!.explanation.residual).toHaveLength(60 - 12);
    expect(e!.explanation.residualStart).toBe(12);
    expect(e!.explanation.trend[1]! / e!.explanation.trend[0]!).toBeCloseTo(2, 9);
    expect(forecastModel.runtime.explain!([{ series: [1, 2, 4, 7], horizon: 2 }])).toMatchObject([
      { explanation: { residualStart: 2, residual: [expect.any(Number), expect.any(Number)] } },
    ]);
  });
});
