/** A column-oriented table as read from a source (or given by a test): one array per column, equal lengths. */
export type Scalar = number | string | boolean | null;
export interface Table {
  rowCount: number;
  columns: Record<string, Scalar[]>;
}

/** How a source column is used as a model input: numbers, booleans (0/1), or categories (one-hot). */
export type FeatureKind = 'numeric' | 'boolean' | 'categorical';
export interface FeatureColumn {
  name: string;
  kind: FeatureKind;
}

export interface NumericEncoding {
  name: string;
  kind: 'numeric' | 'boolean';
  /** Training mean: replaces a missing value, and centres the value when the encoder scales. */
  mean: number;
  std: number;
}

export interface CategoricalEncoding {
  name: string;
  kind: 'categorical';
  /** Kept levels, most frequent first (ties by name). */
  categories: string[];
  /** More levels than the cap were seen: the rest share an "(other)" column. */
  other: boolean;
  /** The first level is the reference and has no column (models with an intercept). */
  dropFirst: boolean;
}

export type FeatureEncoding = NumericEncoding | CategoricalEncoding;

export interface Encoder {
  features: FeatureEncoding[];
  /** Numeric features are standardised (z-scores) when true. */
  scaled: boolean;
  /** Names of the encoded columns, e.g. `price`, `colour=red`, `colour=(other)`. */
  columns: string[];
}

export const OTHER_CATEGORY = '(other)';

export interface EncoderOptions {
  scaled: boolean;
  dropFirst: boolean;
  maxCategories: number;
}

const finite = (v: Scalar): v is number => typeof v === 'number' && Number.isFinite(v);

/** The numeric value of a numeric or boolean cell, or null when missing. */
export function numericValue(v: Scalar | undefined): number | null {
  if (typeof v === 'boolean') return v ? 1 : 0;
  return v !== undefined && finite(v) ? v : null;
}

/** The category of a cell: strings as they are, other scalars by their JSON text; null when missing. */
export function categoryValue(v: Scalar | undefined): string | null {
  if (v === null || v === undefined) return null;
  return typeof v === 'string' ? v : String(v);
}

/** Fits the encoding on the training rows only, so the held-out rows stay unseen. */
export function fitEncoder(table: Table, rows: readonly number[], features: readonly FeatureColumn[], opts: EncoderOptions): Encoder {
  const encodings: FeatureEncoding[] = [];
  const columns: string[] = [];
  for (const f of features) {
    const values = table.columns[f.name]!;
    if (f.kind === 'categorical') {
      const counts = new Map<string, number>();
      for (const r of rows) {
        const c = categoryValue(values[r]);
        if (c !== null) counts.set(c, (counts.get(c) ?? 0) + 1);
      }
      const ranked = [...counts].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)).map(([c]) => c);
      const categories = ranked.slice(0, opts.maxCategories);
      const enc: CategoricalEncoding = { name: f.name, kind: 'categorical', categories, other: ranked.length > categories.length, dropFirst: opts.dropFirst };
      encodings.push(enc);
      categories.forEach((c, i) => {
        if (!(enc.dropFirst && i === 0)) columns.push(`${f.name}=${c}`);
      });
      if (enc.other) columns.push(`${f.name}=${OTHER_CATEGORY}`);
      continue;
    }
    let sum = 0;
    let sumSq = 0;
    let n = 0;
    for (const r of rows) {
      const v = numericValue(values[r]);
      if (v === null) continue;
      sum += v;
      sumSq += v * v;
      n++;
    }
    const mean = n ? sum / n : 0;
    const variance = n > 1 ? Math.max(0, (sumSq - n * mean * mean) / (n - 1)) : 0;
    encodings.push({ name: f.name, kind: f.kind, mean, std: Math.sqrt(variance) });
    columns.push(f.name);
  }
  return { features: encodings, scaled: opts.scaled, columns };
}

/** Encodes one record (feature name → value) into the model's numeric row. */
export function encodeRecord(encoder: Encoder, get: (name: string) => Scalar | undefined, out: number[] = []): number[] {
  out.length = 0;
  for (const f of encoder.features) {
    const v = get(f.name);
    if (f.kind === 'categorical') {
      const c = categoryValue(v);
      let index = c === null ? -1 : f.categories.indexOf(c);
      if (index < 0 && f.other) index = f.categories.length;
      const start = f.dropFirst ? 1 : 0;
      for (let i = start; i < f.categories.length + (f.other ? 1 : 0); i++) out.push(i === index ? 1 : 0);
      continue;
    }
    const x = numericValue(v) ?? f.mean;
    out.push(encoder.scaled ? (f.std > 0 ? (x - f.mean) / f.std : 0) : x);
  }
  return out;
}

/** Encodes the given rows of a table. */
export function encodeRows(encoder: Encoder, table: Table, rows: readonly number[]): number[][] {
  return rows.map((r) => encodeRecord(encoder, (name) => table.columns[name]![r], []));
}
