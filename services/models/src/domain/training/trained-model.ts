import type { Encoder } from './encoding.ts';
import { nearest } from './metrics.ts';

/**
 * A trained model as stored: the fitted feature encoding plus plain parameters. Prediction needs no ML
 * library, only this file, so serving and the held-out evaluation run the very same code.
 */
export const TRAINABLE_TYPES = ['linear_regression', 'logistic_regression', 'random_forest_classifier', 'random_forest_regressor', 'kmeans'] as const;
export type TrainableType = (typeof TRAINABLE_TYPES)[number];
export type Task = 'regression' | 'classification' | 'clustering';
export type ClassLabel = string | number | boolean;

export const TASK_OF: Record<TrainableType, Task> = {
  linear_regression: 'regression',
  logistic_regression: 'classification',
  random_forest_classifier: 'classification',
  random_forest_regressor: 'regression',
  kmeans: 'clustering',
};

export interface LinearParams {
  kind: 'linear';
  weights: number[];
  intercept: number;
}
/** One-vs-rest: class c scores sigmoid(w_c · [x, 1]); the scores are normalised into probabilities. */
export interface LogisticParams {
  kind: 'logistic';
  weights: number[][];
}
/** Each tree flattened into parallel arrays; a leaf has feature -1 and a value (class shares for classifiers). */
export interface FlatTree {
  feature: number[];
  threshold: number[];
  left: number[];
  right: number[];
  value: (number | number[] | null)[];
  /** Training rows reaching each node (models trained before it was stored have none: children weigh alike). */
  cover?: number[];
}
export interface ForestParams {
  kind: 'forest';
  trees: FlatTree[];
}
export interface KMeansParams {
  kind: 'kmeans';
  centroids: number[][];
}
export type ModelParams = LinearParams | LogisticParams | ForestParams | KMeansParams;

export interface TrainedArtifact {
  format: 1;
  type: TrainableType;
  task: Task;
  encoder: Encoder;
  /** Class labels in index order (classifiers only). */
  classes: ClassLabel[] | null;
  params: ModelParams;
}

export type Estimate =
  { task: 'regression'; value: number } | { task: 'classification'; classIndex: number; probabilities: number[] } | { task: 'clustering'; cluster: number; distance: number };

const sigmoid = (z: number) => (z >= 0 ? 1 / (1 + Math.exp(-z)) : Math.exp(z) / (1 + Math.exp(z)));

function dot(w: readonly number[], x: readonly number[]): number {
  let s = 0;
  for (let i = 0; i < x.length; i++) s += w[i]! * x[i]!;
  return s;
}

function leafOf(tree: FlatTree, x: readonly number[]): number | number[] | null {
  let node = 0;
  for (;;) {
    const f = tree.feature[node]!;
    if (f < 0) return tree.value[node] ?? null;
    node = x[f]! < tree.threshold[node]! ? tree.left[node]! : tree.right[node]!;
  }
}

function argmax(values: readonly number[]): number {
  let best = 0;
  for (let i = 1; i < values.length; i++) if (values[i]! > values[best]!) best = i;
  return best;
}

/** Predicts one encoded row. */
export function estimate(artifact: TrainedArtifact, x: readonly number[]): Estimate {
  const p = artifact.params;
  switch (p.kind) {
    case 'linear':
      return { task: 'regression', value: dot(p.weights, x) + p.intercept };
    case 'logistic': {
      const scores = p.weights.map((w) => sigmoid(dot(w, x) + w[x.length]!));
      const total = scores.reduce((s, v) => s + v, 0);
      const probabilities = scores.map((s) => (total > 0 ? s / total : 1 / scores.length));
      return { task: 'classification', classIndex: argmax(probabilities), probabilities };
    }
    case 'forest': {
      if (artifact.task === 'regression') {
        let sum = 0;
        let n = 0;
        for (const t of p.trees) {
          const v = leafOf(t, x);
          if (typeof v === 'number') {
            sum += v;
            n++;
          }
        }
        return { task: 'regression', value: n ? sum / n : 0 };
      }
      const k = artifact.classes!.length;
      const probabilities = new Array<number>(k).fill(0);
      for (const t of p.trees) {
        const v = leafOf(t, x);
        if (Array.isArray(v)) for (let c = 0; c < k; c++) probabilities[c]! += (v[c] ?? 0) / p.trees.length;
      }
      return { task: 'classification', classIndex: argmax(probabilities), probabilities };
    }
    case 'kmeans': {
      const { index, distanceSq } = nearest(p.centroids, x);
      return { task: 'clustering', cluster: index, distance: Math.sqrt(distanceSq) };
    }
  }
}

const round = (v: number) => Math.round(v * 1e9) / 1e9;

/** The API's answer for one input. */
export function outputOf(artifact: TrainedArtifact, e: Estimate): Record<string, unknown> {
  switch (e.task) {
    case 'regression':
      return { prediction: e.value };
    case 'classification': {
      const classes = artifact.classes!;
      const probabilities: Record<string, number> = {};
      classes.forEach((c, i) => (probabilities[String(c)] = round(e.probabilities[i]!)));
      return { prediction: classes[e.classIndex], probabilities };
    }
    case 'clustering':
      return { cluster: e.cluster, distance: e.distance };
  }
}

/**
 * The point explanations are measured from: numbers and booleans at their training mean (0 once
 * standardised), every one-hot column 0 (the reference category, or no kept category where there is none).
 */
export function referenceRow(encoder: Encoder): number[] {
  const out: number[] = [];
  for (const f of encoder.features) {
    if (f.kind === 'categorical') {
      const columns = f.categories.length + (f.other ? 1 : 0) - (f.dropFirst ? 1 : 0);
      for (let i = 0; i < columns; i++) out.push(0);
    } else out.push(encoder.scaled ? 0 : f.mean);
  }
  return out;
}

/** How many encoded columns each feature has, in the encoder's order. */
export function columnsPerFeature(encoder: Encoder): { name: string; columns: number }[] {
  return encoder.features.map((f) => ({
    name: f.name,
    columns: f.kind === 'categorical' ? f.categories.length + (f.other ? 1 : 0) - (f.dropFirst ? 1 : 0) : 1,
  }));
}

/**
 * Exact additive explanation of a linear score s(x) = w·x + b: column c contributes w_c·(x_c − r_c) from the
 * reference row r, and base + Σ contributions = s(x) (Shapley values of a linear model with independent
 * inputs). Linear regression: s is the prediction. Logistic regression: s is the log-odds of class
 * `classIndex`'s one-vs-rest score (its probability is sigmoid(s) normalised over the classes' scores).
 * Null for models without a linear score.
 */
export function explainLinear(artifact: TrainedArtifact, x: readonly number[], classIndex = 0): { baseValue: number; value: number; contributions: number[] } | null {
  const p = artifact.params;
  let w: readonly number[];
  let b: number;
  if (p.kind === 'linear') {
    w = p.weights;
    b = p.intercept;
  } else if (p.kind === 'logistic') {
    w = p.weights[classIndex]!;
    b = w[x.length]!;
  } else return null;
  const r = referenceRow(artifact.encoder);
  const contributions = x.map((v, c) => w[c]! * (v - r[c]!));
  return { baseValue: b + dot(w, r), value: dot(w, x) + b, contributions };
}

/**
 * Each node's expected value per output (one for regression, one per class): a leaf's own value, an inner
 * node's the cover-weighted mean of its children's. Computed once per tree and kept with the runtime.
 */
export function nodeExpectations(tree: FlatTree, outputs: number): number[][] {
  const out: number[][] = new Array(tree.feature.length);
  const visit = (node: number): number[] => {
    if (tree.feature[node]! < 0) {
      const v = tree.value[node];
      out[node] = Array.from({ length: outputs }, (_, c) => (Array.isArray(v) ? (v[c] ?? 0) : typeof v === 'number' ? v : 0));
      return out[node];
    }
    const l = tree.left[node]!;
    const r = tree.right[node]!;
    const vl = visit(l);
    const vr = visit(r);
    const cl = tree.cover?.[l] ?? 0;
    const cr = tree.cover?.[r] ?? 0;
    const wl = cl + cr > 0 ? cl / (cl + cr) : 0.5;
    out[node] = vl.map((v, c) => wl * v + (1 - wl) * vr[c]!);
    return out[node];
  };
  visit(0);
  return out;
}

/**
 * The exact path decomposition of a forest's output (Saabas): along each tree's decision path, the change
 * in the node's expected value is credited to the split's column; averaged over the trees, base (the roots'
 * mean) + Σ contributions = the forest's output exactly. Regression: the prediction; classification: the
 * probability of `output` (a class index). Unlike TreeSHAP it credits a feature by where it splits on the
 * path, so features high in the trees can be credited more than their Shapley value.
 */
export function explainForest(
  params: ForestParams,
  expectations: readonly number[][][],
  x: readonly number[],
  output: number,
): { baseValue: number; value: number; contributions: number[] } {
  const contributions = new Array<number>(x.length).fill(0);
  const n = params.trees.length;
  let baseValue = 0;
  let value = 0;
  params.trees.forEach((tree, t) => {
    const e = expectations[t]!;
    let node = 0;
    baseValue += e[0]![output]! / n;
    for (;;) {
      const f = tree.feature[node]!;
      if (f < 0) break;
      const next = x[f]! < tree.threshold[node]! ? tree.left[node]! : tree.right[node]!;
      contributions[f]! += (e[next]![output]! - e[node]![output]!) / n;
      node = next;
    }
    value += e[node]![output]! / n;
  });
  return { baseValue, value, contributions };
}
