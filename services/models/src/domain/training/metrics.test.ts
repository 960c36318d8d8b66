import { classificationMetrics, inertia, regressionMetrics, rocAuc, silhouette } from './metrics.ts';
import { featureDrift, numericProfile, categoricalProfile, psi, binOf } from './drift.ts';
import { holdoutSplit } from './split.ts';
import { encodeRecord, fitEncoder } from './encoding.ts';
import { tableOf } from './synthetic-data.ts';

describe('evaluation metrics, against hand computations', () => {
  it('regression: MAE, RMSE, R²', () => {
    expect(regressionMetrics([1, 2, 3], [1, 2, 5])).toEqual({ mae: 0.666667, rmse: 1.154701, r2: -1 });
    expect(regressionMetrics([2, 2], [2, 3]).r2).toBeNull(); // constant truth
  });

  it('ROC AUC by pairs, ties counting half', () => {
    expect(rocAuc([true, true, false, false], [0.9, 0.4, 0.6, 0.1])).toBe(0.75);
    expect(rocAuc([true, false], [0.5, 0.5])).toBe(0.5);
    expect(rocAuc([true, true], [0.1, 0.2])).toBeNull();
  });

  it('classification: accuracy, macro precision/recall/F1 and the confusion matrix', () => {
    const probs = [
      [0.8, 0.1, 0.1],
      [0.3, 0.6, 0.1],
      [0.1, 0.8, 0.1],
      [0.2, 0.7, 0.1],
      [0.5, 0.2, 0.3],
    ];
    const m = classificationMetrics([0, 0, 1, 1, 2], [0, 1, 1, 1, 0], probs, 3);
    expect(m.confusionMatrix).toEqual([
      [1, 1, 0],
      [0, 2, 0],
      [1, 0, 0],
    ]);
    expect(m).toMatchObject({ accuracy: 0.6, precision: 0.388889, recall: 0.5, f1: 0.433333 });
    // One-vs-rest macro AUC, each class's AUC counted pair by pair here.
    const pairAuc = (c: number) => {
      const pos = probs.filter((_, i) => [0, 0, 1, 1, 2][i] === c).map((p) => p[c]!);
      const neg = probs.filter((_, i) => [0, 0, 1, 1, 2][i] !== c).map((p) => p[c]!);
      let s = 0;
      for (const p of pos) for (const n of neg) s += p > n ? 1 : p === n ? 0.5 : 0;
      return s / (pos.length * neg.length);
    };
    expect(m.rocAuc).toBeCloseTo((pairAuc(0) + pairAuc(1) + pairAuc(2)) / 3, 6);
  });

  it('clustering: inertia and silhouette', () => {
    const points = [[0], [1], [10], [11]];
    expect(inertia([[0.5], [10.5]], points)).toBe(1);
    expect(silhouette(points, [0, 0, 1, 1])).toBeCloseTo((9.5 / 10.5 + 8.5 / 9.5) / 2, 6);
    expect(silhouette(points, [0, 0, 0, 0])).toBeNull();
  });
});

describe('drift', () => {
  it('computes PSI as Σ (a − e)·ln(a / e)', () => {
    expect(psi([0.5, 0.5], [0.25, 0.75])).toBeCloseTo(0.25 * Math.log(2) + 0.25 * Math.log(1.5), 5);
    expect(psi([0.5, 0.5], [0.5, 0.5])).toBe(0);
  });

  it('bins numeric values at the training deciles and flags a shift', () => {
    const train = Array.from({ length: 1000 }, (_, i) => i / 10);
    const profile = numericProfile('x', 'numeric', train);
    if (profile.kind === 'categorical') throw new Error('unexpected');
    expect(profile.edges).toHaveLength(9);
    expect(profile.expected.every((s) => Math.abs(s - 0.1) < 0.002)).toBe(true);
    expect(binOf(profile.edges, -5)).toBe(0);
    expect(binOf(profile.edges, 1e9)).toBe(9);
    const same = featureDrift(
      profile,
      Array.from({ length: 200 }, (_, i) => i / 2),
    );
    expect(same.status).toBe('stable');
    const shifted = featureDrift(
      profile,
      Array.from({ length: 200 }, (_, i) => 80 + i / 10),
    );
    expect(shifted.status).toBe('significant');
    expect(featureDrift(profile, [1, 2, 3]).status).toBe('insufficient_data');
  });

  it('compares category frequencies, pooling unseen ones', () => {
    const profile = categoricalProfile('c', [...Array(50).fill('a'), ...Array(50).fill('b')]);
    const d = featureDrift(profile, [...Array(25).fill('a'), ...Array(25).fill('b'), ...Array(50).fill('zzz')]);
    expect(d.bins).toEqual(['a', 'b', '(other)']);
    expect(d.actual).toEqual([0.25, 0.25, 0.5]);
    expect(d.psi).toBeCloseTo(psi([0.5, 0.5, 0], [0.25, 0.25, 0.5]), 6);
    expect(d.status).toBe('significant');
  });
});

describe('split and encoding', () => {
  it('splits reproducibly and keeps class shares when stratified', () => {
    const strata = Array.from({ length: 100 }, (_, i) => (i < 80 ? 0 : 1));
    const s = holdoutSplit(100, 0.2, 42, strata);
    expect(s.test.filter((i) => strata[i] === 1)).toHaveLength(4);
    expect(s.test).toHaveLength(20);
    expect(new Set([...s.train, ...s.test]).size).toBe(100);
    expect(holdoutSplit(100, 0.2, 42, strata)).toEqual(s);
    expect(holdoutSplit(100, 0.2, 43, strata).test).not.toEqual(s.test);
  });

  it('one-hot encodes the most frequent categories, pooling the rest, and imputes missing numbers', () => {
    const table = tableOf([
      { c: 'a', x: 1 },
      { c: 'a', x: 3 },
      { c: 'b', x: null },
      { c: 'c', x: 5 },
      { c: 'a', x: 3 },
    ]);
    const enc = fitEncoder(
      table,
      [0, 1, 2, 3, 4],
      [
        { name: 'c', kind: 'categorical' },
        { name: 'x', kind: 'numeric' },
      ],
      { scaled: false, dropFirst: false, maxCategories: 2 },
    );
    expect(enc.columns).toEqual(['c=a', 'c=b', 'c=(other)', 'x']);
    expect(encodeRecord(enc, (n) => ({ c: 'c', x: null })[n])).toEqual([0, 0, 1, 3]);
    expect(encodeRecord(enc, (n) => ({ c: 'zzz', x: 10 })[n])).toEqual([0, 0, 1, 10]);
    expect(encodeRecord(enc, (n) => ({ c: 'b', x: 1 })[n])).toEqual([0, 1, 0, 1]);
  });
});
