import LogisticRegression from 'ml-logistic-regression';
import MultivariateLinearRegression from 'ml-regression-multivariate-linear';
import { RandomForestClassifier, RandomForestRegression } from 'ml-random-forest';
import { Matrix } from 'ml-matrix';
import type { FlatTree, ForestParams, KMeansParams, LinearParams, LogisticParams } from './trained-model.ts';

/** Fitting proper is the mljs libraries' job; these functions adapt data in and parameters out. */

export class TrainingError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'TrainingError';
  }
}

const round = (v: number) => Math.round(v * 1e9) / 1e9;

/** Ordinary least squares with an intercept (normal equations, solved through an SVD by the library). */
export function trainLinear(X: number[][], y: number[]): { params: LinearParams; standardErrors: number[] | null } {
  const d = X[0]?.length ?? 0;
  if (X.length <= d + 1) throw new TrainingError(`linear regression needs more training rows (${X.length}) than encoded features plus one (${d + 1})`);
  const model = new MultivariateLinearRegression(
    X,
    y.map((v) => [v]),
    { intercept: true, statistics: true },
  );
  const weights = model.weights.slice(0, d).map((row) => row[0]!);
  const intercept = model.weights[d]![0]!;
  const se = model.stdErrors?.map((v) => (Number.isFinite(v) ? v : NaN));
  return { params: { kind: 'linear', weights, intercept }, standardErrors: se && se.every(Number.isFinite) ? se : null };
}

/**
 * One-vs-rest logistic regression by batch gradient ascent. The library adds no intercept, so a constant
 * column is appended; it sums the gradient over rows, so the rate is divided by the row count to make
 * `learningRate` a per-row (mean-gradient) rate that does not depend on the data size.
 */
export function trainLogistic(X: number[][], y: number[], classCount: number, hp: { learningRate: number; maxIterations: number }): LogisticParams {
  const n = X.length;
  const features = new Matrix(X.map((row) => [...row, 1]));
  const model = new LogisticRegression({ numSteps: hp.maxIterations, learningRate: hp.learningRate / n });
  model.train(features, Matrix.columnVector(y));
  if (model.classifiers.length !== classCount) throw new TrainingError(`expected ${classCount} classes in the training rows, found ${model.classifiers.length}`);
  // The library labels the class itself 0 and "the rest" 1, so its score is P(not c): negate the weights.
  const weights = model.classifiers.map((c) => c.weights.to1DArray().map((w) => (w === 0 ? 0 : -w)));
  if (!weights.every((w) => w.every(Number.isFinite))) throw new TrainingError('logistic regression diverged; lower learningRate');
  return { kind: 'logistic', weights };
}

/** What the trainer reads from ml-cart trees (the library exposes no types for them). */
interface CartNode {
  left?: CartNode;
  right?: CartNode;
  splitColumn?: number;
  splitValue?: number;
  distribution?: number | { to1DArray(): number[] } | number[];
}
interface ForestInternals {
  estimators: { root: CartNode }[];
  indexes: number[][];
  featureImportance(): number[];
}

/** Flattens one tree into parallel arrays, mapping its column subset back to the full encoded row. */
export function flattenTree(root: CartNode, columns: readonly number[], classCount: number | null): FlatTree {
  const tree: FlatTree = { feature: [], threshold: [], left: [], right: [], value: [] };
  const add = (node: CartNode): number => {
    const id = tree.feature.length;
    tree.feature.push(-1);
    tree.threshold.push(0);
    tree.left.push(-1);
    tree.right.push(-1);
    tree.value.push(null);
    if (node.left && node.right && node.splitColumn !== undefined && node.splitValue !== undefined) {
      tree.feature[id] = columns[node.splitColumn]!;
      tree.threshold[id] = node.splitValue;
      tree.left[id] = add(node.left);
      tree.right[id] = add(node.right);
      return id;
    }
    const d = node.distribution;
    if (classCount === null) {
      tree.value[id] = typeof d === 'number' ? d : null;
    } else {
      const shares = Array.isArray(d) ? d : d && typeof d === 'object' ? d.to1DArray() : [];
      tree.value[id] = Array.from({ length: classCount }, (_, c) => round(shares[c] ?? 0));
    }
    return id;
  };
  add(root);
  return tree;
}

/** How many of the rows reach each node: the weights explanations average the children's values with. */
export function coverOf(tree: FlatTree, X: readonly (readonly number[])[]): number[] {
  const cover = new Array<number>(tree.feature.length).fill(0);
  for (const x of X) {
    let node = 0;
    for (;;) {
      cover[node]!++;
      const f = tree.feature[node]!;
      if (f < 0) break;
      node = x[f]! < tree.threshold[node]! ? tree.left[node]! : tree.right[node]!;
    }
  }
  return cover;
}

export interface ForestHyperparameters {
  nEstimators: number;
  maxDepth: number;
  maxFeatures: number;
  minSamplesLeaf: number;
  sampleRows: number;
  seed: number;
}

/**
 * A random forest from ml-random-forest (bagged ml-cart trees, a random feature subset per tree). ml-cart
 * scores every candidate split with a pass over the node's rows, so a tree costs O(rows²) per feature:
 * the forest trains on the first `sampleRows` (already shuffled) training rows.
 */
export function trainForest(X: number[][], y: number[], classCount: number | null, hp: ForestHyperparameters): { params: ForestParams; importances: number[] } {
  const rows = Math.min(hp.sampleRows, X.length);
  const Xs = X.slice(0, rows);
  const ys = y.slice(0, rows);
  const cols = Xs[0]?.length ?? 0;
  if (!cols) throw new TrainingError('a random forest needs at least one encoded feature');
  const count = Math.max(1, Math.min(cols, Math.round(cols * hp.maxFeatures)));
  // The library reads a number in (0, 1] as a fraction and a larger integer as a count, so 1 means "all".
  const maxFeatures = count === cols ? 1 : count === 1 ? 1.5 / cols : count;
  const options = {
    nEstimators: hp.nEstimators,
    maxFeatures,
    replacement: false,
    seed: hp.seed,
    useSampleBagging: true,
    noOOB: true,
    treeOptions: { maxDepth: hp.maxDepth, minNumSamples: hp.minSamplesLeaf },
  };
  const forest = classCount === null ? new RandomForestRegression({ ...options, selectionMethod: 'mean' }) : new RandomForestClassifier(options);
  forest.train(Xs, ys);
  const internals = forest as unknown as ForestInternals;
  const trees = internals.estimators.map((e, i) => flattenTree(e.root, internals.indexes[i]!, classCount));
  for (const tree of trees) tree.cover = coverOf(tree, Xs);
  let importances: number[];
  try {
    importances = internals.featureImportance().map((v) => (Number.isFinite(v) ? round(v) : 0));
  } catch {
    importances = new Array<number>(cols).fill(0);
  }
  return { params: { kind: 'forest', trees }, importances };
}

/**
 * k-means++ from ml-kmeans. It is an ES module only, so it is imported on first use: the training worker
 * runs under Node's own loader, where that works (jest's CommonJS runtime cannot load it).
 */
export async function trainKMeans(
  X: number[][],
  hp: { k: number; maxIterations: number; seed: number },
): Promise<{ params: KMeansParams; clusters: number[]; iterations: number; converged: boolean }> {
  if (X.length < hp.k) throw new TrainingError(`k-means with k = ${hp.k} needs at least ${hp.k} training rows; there are ${X.length}`);
  const { kmeans } = await import('ml-kmeans');
  const result = kmeans(X, hp.k, { seed: hp.seed, initialization: 'kmeans++', maxIterations: hp.maxIterations });
  return { params: { kind: 'kmeans', centroids: result.centroids }, clusters: result.clusters, iterations: result.iterations, converged: result.converged };
}
