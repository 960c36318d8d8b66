import type { z } from 'zod';
import type { forestHyperparameters, kmeansHyperparameters, linearHyperparameters, logisticHyperparameters } from '@dap/contracts';
import { profileFeatures, type FeatureProfile } from './drift.ts';
import { encodeRows, fitEncoder, numericValue, type Encoder, type FeatureColumn, type FeatureKind, type Scalar, type Table } from './encoding.ts';
import { classificationMetrics, inertia, nearest, regressionMetrics, silhouette } from './metrics.ts';
import { holdoutSplit } from './split.ts';
import { estimate, TASK_OF, type ClassLabel, type TrainableType, type TrainedArtifact } from './trained-model.ts';
import { trainForest, trainKMeans, TrainingError, trainLinear, trainLogistic } from './trainers.ts';

export { TrainingError } from './trainers.ts';

type LinearHp = z.output<typeof linearHyperparameters>;
type LogisticHp = z.output<typeof logisticHyperparameters>;
type ForestHp = z.output<typeof forestHyperparameters>;
type KMeansHp = z.output<typeof kmeansHyperparameters>;

export type TrainingSpec =
  | { type: 'linear_regression'; target: FeatureColumn; features: FeatureColumn[]; hyperparameters: LinearHp }
  | { type: 'logistic_regression'; target: FeatureColumn; features: FeatureColumn[]; hyperparameters: LogisticHp }
  | { type: 'random_forest_classifier' | 'random_forest_regressor'; target: FeatureColumn; features: FeatureColumn[]; hyperparameters: ForestHp }
  | { type: 'kmeans'; target: null; features: FeatureColumn[]; hyperparameters: KMeansHp };

export interface TrainingLimits {
  maxClasses: number;
  /** Held-out points the silhouette is computed on (it is quadratic). */
  silhouetteSample: number;
}

export interface TrainingOutcome {
  artifact: TrainedArtifact;
  /** What the API shows of the fitted model (coefficients, centroids, importances). */
  parameters: Record<string, unknown>;
  evaluation: Record<string, unknown>;
  profile: FeatureProfile[];
  rows: { train: number; test: number };
}

export const MIN_TRAINING_ROWS = 10;
const round = (v: number) => Math.round(v * 1e9) / 1e9;

function compareLabels(a: ClassLabel, b: ClassLabel): number {
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  const x = String(a);
  const y = String(b);
  return x < y ? -1 : x > y ? 1 : 0;
}

function byName<T>(names: readonly string[], values: readonly T[]): Record<string, T> {
  const out: Record<string, T> = {};
  names.forEach((n, i) => (out[n] = values[i]!));
  return out;
}

/** Numeric columns back in the data's units (k-means centroids are fitted on z-scores). */
function unscale(encoder: Encoder, row: readonly number[]): number[] {
  const out = row.slice();
  let col = 0;
  for (const f of encoder.features) {
    if (f.kind === 'categorical') {
      col += f.categories.length + (f.other ? 1 : 0) - (f.dropFirst ? 1 : 0);
      continue;
    }
    if (encoder.scaled) out[col] = row[col]! * (f.std > 0 ? f.std : 1) + f.mean;
    col++;
  }
  return out.map(round);
}

function targetLabels(values: readonly Scalar[], kind: FeatureKind): { rows: number[]; labels: ClassLabel[] } {
  const rows: number[] = [];
  const labels: ClassLabel[] = [];
  values.forEach((v, i) => {
    if (v === null || v === undefined || (typeof v === 'number' && !Number.isFinite(v))) return;
    rows.push(i);
    labels.push(kind === 'boolean' && typeof v === 'number' ? v !== 0 : v);
  });
  return { rows, labels };
}

/**
 * Trains one model: drops rows without a target, splits the rest (seeded; stratified for classifiers),
 * fits the encoding and the model on the training part, and evaluates on the held-out part with the same
 * prediction code that serves requests.
 */
export async function trainModel(spec: TrainingSpec, table: Table, limits: TrainingLimits): Promise<TrainingOutcome> {
  const task = TASK_OF[spec.type as TrainableType];
  const hp = spec.hyperparameters;
  for (const f of [...spec.features, ...(spec.target ? [spec.target] : [])]) {
    if (!table.columns[f.name]) throw new TrainingError(`the data has no column ${JSON.stringify(f.name)}`);
  }

  // Rows with a usable target, and the target as numbers (regression) or class indices.
  let rows: number[];
  let y: number[] = [];
  let classes: ClassLabel[] | null = null;
  if (task === 'clustering') {
    rows = Array.from({ length: table.rowCount }, (_, i) => i);
  } else if (task === 'regression') {
    const values = table.columns[spec.target!.name]!;
    rows = [];
    values.forEach((v, i) => {
      const x = numericValue(v);
      if (x !== null) {
        rows.push(i);
        y.push(x);
      }
    });
  } else {
    const t = targetLabels(table.columns[spec.target!.name]!, spec.target!.kind);
    rows = t.rows;
    const distinct = [...new Map(t.labels.map((l) => [`${typeof l}:${String(l)}`, l])).values()].sort(compareLabels);
    if (distinct.length < 2)
      throw new TrainingError(`the target ${JSON.stringify(spec.target!.name)} has ${distinct.length} distinct value(s); a classifier needs at least two classes`);
    if (distinct.length > limits.maxClasses)
      throw new TrainingError(`the target ${JSON.stringify(spec.target!.name)} has ${distinct.length} distinct values; at most ${limits.maxClasses} classes are supported`);
    classes = distinct;
    const index = new Map(distinct.map((l, i) => [`${typeof l}:${String(l)}`, i]));
    y = t.labels.map((l) => index.get(`${typeof l}:${String(l)}`)!);
  }
  if (rows.length < MIN_TRAINING_ROWS) {
    const have = task === 'clustering' ? `the data has only ${rows.length} rows` : `only ${rows.length} rows have a usable target`;
    throw new TrainingError(`${have}; at least ${MIN_TRAINING_ROWS} are needed`);
  }

  const split = holdoutSplit(rows.length, hp.testFraction, hp.seed, task === 'classification' ? y : undefined);
  if (split.test.length < 2) throw new TrainingError(`the held-out part would have ${split.test.length} rows; add rows or raise testFraction`);
  const trainRows = split.train.map((i) => rows[i]!);
  const testRows = split.test.map((i) => rows[i]!);
  const yTrain = split.train.map((i) => y[i]!);
  const yTest = split.test.map((i) => y[i]!);

  const encoder = fitEncoder(table, trainRows, spec.features, {
    scaled: spec.type === 'logistic_regression' || spec.type === 'kmeans',
    dropFirst: spec.type === 'linear_regression' || spec.type === 'logistic_regression',
    maxCategories: hp.maxCategories,
  });
  if (!encoder.columns.length) throw new TrainingError('the features encode to no columns (each string feature has a single category)');
  const XTrain = encodeRows(encoder, table, trainRows);
  const XTest = encodeRows(encoder, table, testRows);
  const cols = encoder.columns;

  let artifact: TrainedArtifact;
  let parameters: Record<string, unknown>;
  const base = { format: 1 as const, type: spec.type, task, encoder, classes };
  const extra: Record<string, unknown> = {};
  switch (spec.type) {
    case 'linear_regression': {
      const { params, standardErrors } = trainLinear(XTrain, yTrain);
      artifact = { ...base, params };
      parameters = {
        intercept: round(params.intercept),
        coefficients: byName(cols, params.weights.map(round)),
        standardErrors: standardErrors ? { ...byName(cols, standardErrors.slice(0, cols.length).map(round)), '(intercept)': round(standardErrors[cols.length]!) } : null,
      };
      break;
    }
    case 'logistic_regression': {
      const params = trainLogistic(XTrain, yTrain, classes!.length, spec.hyperparameters);
      artifact = { ...base, params };
      parameters = {
        classes,
        featureScaling: 'numeric features are standardised with the training mean and standard deviation before the weights apply',
        coefficients: Object.fromEntries(classes!.map((c, k) => [String(c), byName(cols, params.weights[k]!.slice(0, cols.length).map(round))])),
        intercepts: Object.fromEntries(classes!.map((c, k) => [String(c), round(params.weights[k]![cols.length]!)])),
      };
      break;
    }
    case 'random_forest_classifier':
    case 'random_forest_regressor': {
      const forestHp = spec.hyperparameters;
      const { params, importances } = trainForest(XTrain, yTrain, task === 'classification' ? classes!.length : null, forestHp);
      artifact = { ...base, params };
      const fittedRows = Math.min(forestHp.sampleRows, XTrain.length);
      parameters = { trees: params.trees.length, fittedRows, featureImportances: byName(cols, importances) };
      extra.fittedRows = fittedRows;
      break;
    }
    case 'kmeans': {
      const fit = await trainKMeans(XTrain, spec.hyperparameters);
      artifact = { ...base, params: fit.params };
      const sizes = new Array<number>(spec.hyperparameters.k).fill(0);
      for (const c of fit.clusters) sizes[c]!++;
      parameters = {
        centroids: fit.params.centroids.map((c) => byName(cols, unscale(encoder, c))),
        clusterSizes: sizes,
        iterations: fit.iterations,
        converged: fit.converged,
      };
      extra.trainInertia = round(inertia(fit.params.centroids, XTrain));
      extra.clusterSizes = sizes;
      break;
    }
  }

  const estimates = XTest.map((x) => estimate(artifact, x));
  const splitInfo = { testFraction: hp.testFraction, seed: hp.seed, stratified: split.stratified, trainRows: trainRows.length, testRows: testRows.length };
  let metrics: Record<string, unknown>;
  if (task === 'regression') {
    const predicted = estimates.map((e) => (e.task === 'regression' ? e.value : NaN));
    const mean = yTrain.reduce((s, v) => s + v, 0) / yTrain.length;
    metrics = {
      ...regressionMetrics(yTest, predicted),
      baseline: {
        description: 'always predicting the training mean',
        ...regressionMetrics(
          yTest,
          yTest.map(() => mean),
        ),
      },
    };
  } else if (task === 'classification') {
    const k = classes!.length;
    const predicted = estimates.map((e) => (e.task === 'classification' ? e.classIndex : 0));
    const probabilities = estimates.map((e) => (e.task === 'classification' ? e.probabilities : new Array<number>(k).fill(1 / k)));
    const m = classificationMetrics(yTest, predicted, probabilities, k);
    const counts = new Array<number>(k).fill(0);
    for (const c of yTrain) counts[c]!++;
    const majority = counts.indexOf(Math.max(...counts));
    metrics = {
      ...m,
      confusionMatrix: { labels: classes, matrix: m.confusionMatrix, note: 'rows are actual classes, columns predicted ones' },
      baseline: { description: 'always predicting the most frequent training class', accuracy: round(yTest.filter((c) => c === majority).length / yTest.length) },
    };
  } else {
    const centroids = artifact.params.kind === 'kmeans' ? artifact.params.centroids : [];
    const sample = XTest.slice(0, limits.silhouetteSample);
    metrics = {
      inertia: round(inertia(centroids, XTest)),
      silhouette: silhouette(
        sample,
        sample.map((x) => nearest(centroids, x).index),
      ),
      silhouetteSample: sample.length,
      space: 'standardised numeric features plus one-hot categories',
    };
  }

  return {
    artifact,
    parameters,
    evaluation: { kind: 'holdout', task, split: splitInfo, ...metrics, ...extra },
    profile: profileFeatures(table, trainRows, spec.features),
    rows: { train: trainRows.length, test: testRows.length },
  };
}
