import { categoryValue, numericValue, type FeatureColumn, type Scalar, type Table } from './encoding.ts';

/**
 * What the training data looked like, per feature, in a form that input drift can be measured against:
 * numeric features by the shares of training values in bins cut at the training deciles, categorical ones
 * by the shares of their most frequent categories (the rest pooled).
 */
export type FeatureProfile =
  | { name: string; kind: 'numeric' | 'boolean'; edges: number[]; expected: number[]; min: number | null; max: number | null; mean: number | null }
  | { name: string; kind: 'categorical'; categories: string[]; expected: number[] };

export const PROFILE_CATEGORIES = 20;
export const PSI_EPSILON = 1e-4;
/** The customary reading of PSI: below 0.1 stable, below 0.25 moderate, above that a significant shift. */
export const PSI_MODERATE = 0.1;
export const PSI_SIGNIFICANT = 0.25;
/** Fewer logged values than this give no PSI (it would be noise). */
export const DRIFT_MIN_VALUES = 30;

const round = (v: number) => Math.round(v * 1e6) / 1e6;

/** Type-7 quantile of sorted values. */
function quantile(sorted: readonly number[], p: number): number {
  const h = (sorted.length - 1) * p;
  const lo = Math.floor(h);
  const hi = Math.min(sorted.length - 1, lo + 1);
  return sorted[lo]! + (h - lo) * (sorted[hi]! - sorted[lo]!);
}

/** The bin of a value: the first edge it does not exceed, or the last bin. */
export function binOf(edges: readonly number[], v: number): number {
  let lo = 0;
  let hi = edges.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (v <= edges[mid]!) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

function shares(counts: readonly number[]): number[] {
  const total = counts.reduce((s, c) => s + c, 0);
  return counts.map((c) => (total ? round(c / total) : 0));
}

export function numericProfile(name: string, kind: 'numeric' | 'boolean', values: readonly (number | null)[]): FeatureProfile {
  const present = values.filter((v): v is number => v !== null).sort((a, b) => a - b);
  if (!present.length) return { name, kind, edges: [], expected: [1], min: null, max: null, mean: null };
  const edges = [...new Set([1, 2, 3, 4, 5, 6, 7, 8, 9].map((d) => quantile(present, d / 10)))];
  const counts = new Array<number>(edges.length + 1).fill(0);
  for (const v of present) counts[binOf(edges, v)]!++;
  const mean = present.reduce((s, v) => s + v, 0) / present.length;
  return { name, kind, edges, expected: shares(counts), min: present[0]!, max: present[present.length - 1]!, mean: round(mean) };
}

export function categoricalProfile(name: string, values: readonly (string | null)[]): FeatureProfile {
  const counts = new Map<string, number>();
  for (const v of values) if (v !== null) counts.set(v, (counts.get(v) ?? 0) + 1);
  const ranked = [...counts].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
  const kept = ranked.slice(0, PROFILE_CATEGORIES);
  const other = ranked.slice(PROFILE_CATEGORIES).reduce((s, [, c]) => s + c, 0);
  return { name, kind: 'categorical', categories: kept.map(([c]) => c), expected: shares([...kept.map(([, c]) => c), other]) };
}

export function profileFeatures(table: Table, rows: readonly number[], features: readonly FeatureColumn[]): FeatureProfile[] {
  return features.map((f) => {
    const column = table.columns[f.name]!;
    if (f.kind === 'categorical')
      return categoricalProfile(
        f.name,
        rows.map((r) => categoryValue(column[r])),
      );
    return numericProfile(
      f.name,
      f.kind,
      rows.map((r) => numericValue(column[r])),
    );
  });
}

/** Population stability index of actual shares against expected ones, both floored at PSI_EPSILON. */
export function psi(expected: readonly number[], actual: readonly number[]): number {
  let sum = 0;
  for (let i = 0; i < expected.length; i++) {
    const e = Math.max(expected[i]!, PSI_EPSILON);
    const a = Math.max(actual[i]!, PSI_EPSILON);
    sum += (a - e) * Math.log(a / e);
  }
  return round(sum);
}

export interface FeatureDrift {
  feature: string;
  kind: FeatureProfile['kind'];
  /** Logged inputs with a value for this feature. */
  values: number;
  psi: number | null;
  status: 'stable' | 'moderate' | 'significant' | 'insufficient_data';
  expected: number[];
  actual: number[] | null;
  /** Bin upper edges (numeric) or categories (categorical), the last bin being everything above / the rest. */
  bins: (number | string)[];
}

/** Drift of one feature: the logged values binned like the training data, then PSI. */
export function featureDrift(profile: FeatureProfile, logged: readonly Scalar[]): FeatureDrift {
  let counts: number[];
  let bins: (number | string)[];
  if (profile.kind === 'categorical') {
    counts = new Array<number>(profile.categories.length + 1).fill(0);
    for (const v of logged) {
      const c = categoryValue(v);
      if (c === null) continue;
      const i = profile.categories.indexOf(c);
      counts[i < 0 ? profile.categories.length : i]!++;
    }
    bins = [...profile.categories, '(other)'];
  } else {
    counts = new Array<number>(profile.edges.length + 1).fill(0);
    for (const v of logged) {
      const x = numericValue(v);
      if (x !== null) counts[binOf(profile.edges, x)]!++;
    }
    bins = profile.edges.slice();
  }
  const values = counts.reduce((s, c) => s + c, 0);
  const base = { feature: profile.name, kind: profile.kind, values, expected: profile.expected, bins };
  if (values < DRIFT_MIN_VALUES) return { ...base, psi: null, status: 'insufficient_data', actual: values ? shares(counts) : null };
  const actual = shares(counts);
  const value = psi(profile.expected, actual);
  return { ...base, psi: value, actual, status: value < PSI_MODERATE ? 'stable' : value < PSI_SIGNIFICANT ? 'moderate' : 'significant' };
}
