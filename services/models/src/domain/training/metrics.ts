/** Held-out evaluation metrics, written out so each is checkable against a hand computation. */

const round = (v: number) => Math.round(v * 1e6) / 1e6;

export function regressionMetrics(actual: readonly number[], predicted: readonly number[]) {
  const n = actual.length;
  let absSum = 0;
  let sqSum = 0;
  let mean = 0;
  for (let i = 0; i < n; i++) mean += actual[i]! / n;
  let total = 0;
  for (let i = 0; i < n; i++) {
    const e = actual[i]! - predicted[i]!;
    absSum += Math.abs(e);
    sqSum += e * e;
    total += (actual[i]! - mean) ** 2;
  }
  return {
    mae: round(absSum / n),
    rmse: round(Math.sqrt(sqSum / n)),
    // R² of a constant target is undefined; report null rather than a division by zero.
    r2: total > 0 ? round(1 - sqSum / total) : null,
  };
}

/** Area under the ROC curve by the rank-sum (Mann-Whitney) formula, ties sharing their average rank. */
export function rocAuc(positive: readonly boolean[], score: readonly number[]): number | null {
  const n = positive.length;
  const order = Array.from({ length: n }, (_, i) => i).sort((a, b) => score[a]! - score[b]!);
  let nPos = 0;
  let rankSum = 0;
  for (let i = 0; i < n;) {
    let j = i;
    while (j + 1 < n && score[order[j + 1]!] === score[order[i]!]) j++;
    const avgRank = (i + j) / 2 + 1;
    for (let k = i; k <= j; k++) {
      if (positive[order[k]!]) {
        nPos++;
        rankSum += avgRank;
      }
    }
    i = j + 1;
  }
  const nNeg = n - nPos;
  if (!nPos || !nNeg) return null;
  return (rankSum - (nPos * (nPos + 1)) / 2) / (nPos * nNeg);
}

/**
 * Accuracy, macro precision/recall/F1 (over the classes that occur in the truth or the predictions),
 * ROC AUC (binary: of the second class; multiclass: one-vs-rest, macro over classes with both outcomes
 * present) and the confusion matrix (rows: actual, columns: predicted).
 */
export function classificationMetrics(actual: readonly number[], predicted: readonly number[], probabilities: readonly (readonly number[])[], classCount: number) {
  const n = actual.length;
  const confusion = Array.from({ length: classCount }, () => new Array<number>(classCount).fill(0));
  let correct = 0;
  for (let i = 0; i < n; i++) {
    confusion[actual[i]!]![predicted[i]!]!++;
    if (actual[i] === predicted[i]) correct++;
  }
  let precisionSum = 0;
  let recallSum = 0;
  let f1Sum = 0;
  let counted = 0;
  for (let c = 0; c < classCount; c++) {
    const tp = confusion[c]![c]!;
    const actualC = confusion[c]!.reduce((s, v) => s + v, 0);
    const predictedC = confusion.reduce((s, row) => s + row[c]!, 0);
    if (!actualC && !predictedC) continue;
    const precision = predictedC ? tp / predictedC : 0;
    const recall = actualC ? tp / actualC : 0;
    precisionSum += precision;
    recallSum += recall;
    f1Sum += precision + recall > 0 ? (2 * precision * recall) / (precision + recall) : 0;
    counted++;
  }
  let auc: number | null;
  if (classCount === 2) {
    auc = rocAuc(
      actual.map((a) => a === 1),
      probabilities.map((p) => p[1]!),
    );
  } else {
    const perClass: number[] = [];
    for (let c = 0; c < classCount; c++) {
      const v = rocAuc(
        actual.map((a) => a === c),
        probabilities.map((p) => p[c]!),
      );
      if (v !== null) perClass.push(v);
    }
    auc = perClass.length ? perClass.reduce((s, v) => s + v, 0) / perClass.length : null;
  }
  return {
    accuracy: round(correct / n),
    precision: round(counted ? precisionSum / counted : 0),
    recall: round(counted ? recallSum / counted : 0),
    f1: round(counted ? f1Sum / counted : 0),
    rocAuc: auc === null ? null : round(auc),
    confusionMatrix: confusion,
  };
}

export function squaredDistance(a: readonly number[], b: readonly number[]): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += (a[i]! - b[i]!) ** 2;
  return s;
}

/** Index of the nearest centroid and the squared distance to it. */
export function nearest(centroids: readonly (readonly number[])[], x: readonly number[]): { index: number; distanceSq: number } {
  let index = 0;
  let best = Infinity;
  for (let c = 0; c < centroids.length; c++) {
    const d = squaredDistance(centroids[c]!, x);
    if (d < best) {
      best = d;
      index = c;
    }
  }
  return { index, distanceSq: best };
}

/** Sum of squared distances of the points to their nearest centroid. */
export function inertia(centroids: readonly (readonly number[])[], points: readonly (readonly number[])[]): number {
  return points.reduce((s, p) => s + nearest(centroids, p).distanceSq, 0);
}

/**
 * Mean silhouette coefficient (Euclidean). A point alone in its cluster scores 0, as in scikit-learn.
 * Quadratic in the number of points: callers pass a bounded sample.
 */
export function silhouette(points: readonly (readonly number[])[], labels: readonly number[]): number | null {
  const n = points.length;
  const clusters = [...new Set(labels)];
  if (clusters.length < 2 || n < 3) return null;
  const size = new Map<number, number>();
  for (const l of labels) size.set(l, (size.get(l) ?? 0) + 1);
  let total = 0;
  const sums = new Map<number, number>();
  for (let i = 0; i < n; i++) {
    sums.clear();
    for (let j = 0; j < n; j++) {
      if (i === j) continue;
      const d = Math.sqrt(squaredDistance(points[i]!, points[j]!));
      sums.set(labels[j]!, (sums.get(labels[j]!) ?? 0) + d);
    }
    const own = labels[i]!;
    const ownSize = size.get(own)!;
    if (ownSize <= 1) continue;
    const a = (sums.get(own) ?? 0) / (ownSize - 1);
    let b = Infinity;
    for (const c of clusters) if (c !== own) b = Math.min(b, (sums.get(c) ?? 0) / size.get(c)!);
    const m = Math.max(a, b);
    total += m > 0 ? (b - a) / m : 0;
  }
  return round(total / n);
}
