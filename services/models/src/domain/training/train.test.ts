import { encodeRecord } from './encoding.ts';
import { estimate, outputOf } from './trained-model.ts';
import { trainModel, TrainingError, type TrainingSpec } from './train.ts';
import { trainLinear } from './trainers.ts';
import { LINEAR_FEATURES, LINEAR_TARGET, LINEAR_TRUTH, linearRows, separableRows, tableOf } from './synthetic-data.ts';

const limits = { maxClasses: 50, silhouetteSample: 500 };
const common = { seed: 7, testFraction: 0.2, maxCategories: 20 };

/** Solves A·x = b by Gaussian elimination with partial pivoting (written here, independent of the code under test). */
function solve(A: number[][], b: number[]): number[] {
  const n = b.length;
  const m = A.map((row, i) => [...row, b[i]!]);
  for (let c = 0; c < n; c++) {
    let p = c;
    for (let r = c + 1; r < n; r++) if (Math.abs(m[r]![c]!) > Math.abs(m[p]![c]!)) p = r;
    [m[c], m[p]] = [m[p]!, m[c]!];
    for (let r = 0; r < n; r++) {
      if (r === c) continue;
      const f = m[r]![c]! / m[c]![c]!;
      for (let k = c; k <= n; k++) m[r]![k]! -= f * m[c]![k]!;
    }
  }
  return m.map((row, i) => row[n]! / row[i]!);
}

/** β = (XᵀX)⁻¹Xᵀy with a leading column of ones. */
function normalEquations(X: number[][], y: number[]): number[] {
  const Z = X.map((r) => [1, ...r]);
  const d = Z[0]!.length;
  const XtX = Array.from({ length: d }, (_, i) => Array.from({ length: d }, (_, j) => Z.reduce((s, r) => s + r[i]! * r[j]!, 0)));
  const Xty = Array.from({ length: d }, (_, i) => Z.reduce((s, r, k) => s + r[i]! * y[k]!, 0));
  return solve(XtX, Xty);
}

describe('linear regression', () => {
  it('matches the closed-form normal-equation solution on the same rows', () => {
    const rows = linearRows(300, 11, 1);
    const X = rows.map((r) => [r.x1 as number, r.x2 as number, r.x3 as number]);
    const y = rows.map((r) => r.y as number);
    const { params } = trainLinear(X, y);
    const beta = normalEquations(X, y);
    expect(params.intercept).toBeCloseTo(beta[0]!, 8);
    params.weights.forEach((w, i) => expect(w).toBeCloseTo(beta[i + 1]!, 8));
  });

  it('recovers the generating coefficients, categories included, and evaluates on held-out rows', async () => {
    const table = tableOf(linearRows(1000, 3));
    const spec: TrainingSpec = {
      type: 'linear_regression',
      target: LINEAR_TARGET,
      features: [...LINEAR_FEATURES],
      hyperparameters: common,
    };
    const out = await trainModel(spec, table, limits);
    expect([...out.artifact.encoder.columns].sort()).toEqual(['colour=green', 'colour=red', 'x1', 'x2', 'x3']); // blue, the most frequent, is the reference
    const p = out.parameters as { intercept: number; coefficients: Record<string, number> };
    expect(p.intercept).toBeCloseTo(LINEAR_TRUTH.intercept, 1);
    expect(Math.abs(p.coefficients.x1! - LINEAR_TRUTH.x1)).toBeLessThan(0.01);
    expect(Math.abs(p.coefficients.x2! - LINEAR_TRUTH.x2)).toBeLessThan(0.02);
    expect(Math.abs(p.coefficients.x3! - LINEAR_TRUTH.x3)).toBeLessThan(0.01);
    expect(Math.abs(p.coefficients['colour=red']! - LINEAR_TRUTH.red)).toBeLessThan(0.05);
    expect(Math.abs(p.coefficients['colour=green']! - LINEAR_TRUTH.green)).toBeLessThan(0.05);
    expect(out.rows).toEqual({ train: 800, test: 200 });
    const ev = out.evaluation as { kind: string; mae: number; rmse: number; r2: number; baseline: { mae: number } };
    expect(ev.kind).toBe('holdout');
    expect(ev.rmse).toBeLessThan(0.15); // the noise has σ 0.1
    expect(ev.r2).toBeGreaterThan(0.999);
    expect(ev.mae).toBeLessThan(ev.baseline.mae / 20);
    // Serving uses the same parameters: an unseen colour falls back to the reference level.
    const x = encodeRecord(out.artifact.encoder, (n) => ({ x1: 1, x2: 2, x3: 0, colour: 'red' })[n]);
    expect(outputOf(out.artifact, estimate(out.artifact, x)).prediction).toBeCloseTo(3 + 2 - 3 + 4, 1);
  });

  it('is reproducible: the same seed gives the same model', async () => {
    const table = tableOf(linearRows(200, 5, 2));
    const spec: TrainingSpec = { type: 'linear_regression', target: { name: 'y', kind: 'numeric' }, features: [{ name: 'x1', kind: 'numeric' }], hyperparameters: common };
    const a = await trainModel(spec, table, limits);
    const b = await trainModel(spec, table, limits);
    expect(a.parameters).toEqual(b.parameters);
    const c = await trainModel({ ...spec, hyperparameters: { ...common, seed: 8 } }, table, limits);
    expect(c.parameters).not.toEqual(a.parameters);
  });
});

describe('classifiers on a linearly separable set', () => {
  const table = tableOf(separableRows(600, 21));
  const features = [
    { name: 'a', kind: 'numeric' as const },
    { name: 'b', kind: 'numeric' as const },
    { name: 'noise', kind: 'numeric' as const },
  ];
  const target = { name: 'label', kind: 'categorical' as const };

  it('logistic regression reaches ≥ 97% held-out accuracy with calibrated-looking probabilities', async () => {
    const out = await trainModel({ type: 'logistic_regression', target, features, hyperparameters: { ...common, learningRate: 0.5, maxIterations: 300 } }, table, limits);
    const ev = out.evaluation as Record<string, unknown> & { accuracy: number; rocAuc: number; f1: number; confusionMatrix: { labels: string[]; matrix: number[][] } };
    expect(ev.accuracy).toBeGreaterThanOrEqual(0.97);
    expect(ev.rocAuc).toBeGreaterThanOrEqual(0.99);
    expect(ev.f1).toBeGreaterThanOrEqual(0.97);
    expect(ev.confusionMatrix.labels).toEqual(['no', 'yes']);
    expect(ev.confusionMatrix.matrix.flat().reduce((s, v) => s + v, 0)).toBe(120);
    const x = encodeRecord(out.artifact.encoder, (n) => ({ a: 1.5, b: 1, noise: 0.5 })[n]);
    const o = outputOf(out.artifact, estimate(out.artifact, x)) as { prediction: string; probabilities: Record<string, number> };
    expect(o.prediction).toBe('yes');
    expect(o.probabilities.yes! + o.probabilities.no!).toBeCloseTo(1, 6);
    expect(o.probabilities.yes).toBeGreaterThan(0.9);
  });

  it('a random forest reaches ≥ 93% held-out accuracy', async () => {
    const hp = { ...common, nEstimators: 15, maxDepth: 6, maxFeatures: 1, minSamplesLeaf: 3, sampleRows: 400 };
    const out = await trainModel({ type: 'random_forest_classifier', target, features, hyperparameters: hp }, table, limits);
    const ev = out.evaluation as { accuracy: number; rocAuc: number; fittedRows: number };
    expect(ev.accuracy).toBeGreaterThanOrEqual(0.93);
    expect(ev.rocAuc).toBeGreaterThanOrEqual(0.97);
    expect(ev.fittedRows).toBe(400);
    const imp = (out.parameters as { featureImportances: Record<string, number> }).featureImportances;
    expect(imp.a! + imp.b!).toBeGreaterThan(imp.noise!); // the label depends on a and b only
  });

  it('a random forest regressor fits a non-linear target (R² ≥ 0.9)', async () => {
    const rows = separableRows(500, 4).map((r) => ({ ...r, y: (r.a as number) ** 2 + Math.sin(3 * (r.b as number)) }));
    const hp = { ...common, nEstimators: 15, maxDepth: 8, maxFeatures: 1, minSamplesLeaf: 3, sampleRows: 400 };
    const out = await trainModel({ type: 'random_forest_regressor', target: { name: 'y', kind: 'numeric' }, features, hyperparameters: hp }, tableOf(rows), limits);
    expect((out.evaluation as { r2: number }).r2).toBeGreaterThanOrEqual(0.9);
  });

  it('handles three classes and integer labels, stratifying the split', async () => {
    const rows = separableRows(450, 9).map((r) => ({ ...r, cls: (r.a as number) < -0.7 ? 0 : (r.a as number) < 0.7 ? 1 : 2 }));
    const out = await trainModel(
      { type: 'logistic_regression', target: { name: 'cls', kind: 'numeric' }, features, hyperparameters: { ...common, learningRate: 1, maxIterations: 800 } },
      tableOf(rows),
      limits,
    );
    const ev = out.evaluation as { accuracy: number; rocAuc: number; split: { stratified: boolean }; confusionMatrix: { labels: number[] } };
    expect(ev.confusionMatrix.labels).toEqual([0, 1, 2]);
    expect(ev.split.stratified).toBe(true);
    expect(ev.accuracy).toBeGreaterThanOrEqual(0.85);
    expect(ev.rocAuc).toBeGreaterThanOrEqual(0.95);
    const x = encodeRecord(out.artifact.encoder, (n) => ({ a: 1.8, b: 0, noise: 0.5 })[n]);
    expect(outputOf(out.artifact, estimate(out.artifact, x)).prediction).toBe(2);
  });
});

describe('training refuses data it cannot learn from', () => {
  it('names the reason', async () => {
    const one = tableOf(separableRows(50, 1).map((r) => ({ ...r, label: 'yes' })));
    const spec: TrainingSpec = {
      type: 'logistic_regression',
      target: { name: 'label', kind: 'categorical' },
      features: [{ name: 'a', kind: 'numeric' }],
      hyperparameters: { ...common, learningRate: 0.5, maxIterations: 10 },
    };
    await expect(trainModel(spec, one, limits)).rejects.toThrow(/1 distinct value\(s\); a classifier needs at least two/);
    await expect(trainModel(spec, tableOf(separableRows(5, 1)), limits)).rejects.toBeInstanceOf(TrainingError);
    await expect(trainModel({ ...spec, target: { name: 'nope', kind: 'categorical' } }, one, limits)).rejects.toThrow(/no column "nope"/);
    // k-means has no target: too few rows is just too few rows.
    const kmeans: TrainingSpec = { type: 'kmeans', target: null, features: [{ name: 'a', kind: 'numeric' }], hyperparameters: { ...common, k: 2, maxIterations: 10 } };
    await expect(trainModel(kmeans, tableOf(separableRows(2, 1)), limits)).rejects.toThrow(/^the data has only 2 rows; at least 10 are needed$/);
  });
});
