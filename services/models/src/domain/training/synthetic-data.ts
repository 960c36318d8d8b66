import type { Scalar, Table } from './encoding.ts';
import { mulberry32 } from '@dap/random';

/** Seeded synthetic data sets with known generating parameters, for tests and benchmarks. */

export function gaussian(random: () => number): () => number {
  return () => {
    const u = Math.max(random(), 1e-12);
    const v = random();
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
  };
}

export function tableOf(rows: Record<string, Scalar>[]): Table {
  const columns: Record<string, Scalar[]> = {};
  for (const key of Object.keys(rows[0] ?? {})) columns[key] = rows.map((r) => r[key] ?? null);
  return { rowCount: rows.length, columns };
}

/** y = 3 + 2·x1 − 1.5·x2 + 0.5·x3 + {red: 4, green: 1, blue: 0}[colour] + N(0, noise²); blue is the most frequent colour. */
export const LINEAR_TRUTH = { intercept: 3, x1: 2, x2: -1.5, x3: 0.5, red: 4, green: 1 };
/** `linearRows`' features and target, as a training spec names them. */
export const LINEAR_FEATURES = [
  { name: 'x1', kind: 'numeric' },
  { name: 'x2', kind: 'numeric' },
  { name: 'x3', kind: 'numeric' },
  { name: 'colour', kind: 'categorical' },
] as const satisfies readonly { name: string; kind: 'numeric' | 'categorical' }[];
export const LINEAR_TARGET = { name: 'y', kind: 'numeric' } as const;
export function linearRows(n: number, seed: number, noise = 0.1): Record<string, Scalar>[] {
  const random = mulberry32(seed);
  const normal = gaussian(random);
  return Array.from({ length: n }, () => {
    const x1 = random() * 10 - 5;
    const x2 = random() * 4;
    const x3 = normal() * 3;
    const u = random();
    const colour = u < 0.5 ? 'blue' : u < 0.75 ? 'red' : 'green';
    const effect = colour === 'red' ? LINEAR_TRUTH.red : colour === 'green' ? LINEAR_TRUTH.green : 0;
    const y = LINEAR_TRUTH.intercept + LINEAR_TRUTH.x1 * x1 + LINEAR_TRUTH.x2 * x2 + LINEAR_TRUTH.x3 * x3 + effect + normal() * noise;
    return { x1, x2, x3, colour, y };
  });
}

/** Two classes split by the line a + b = 0, with a margin of 0.3 around it (linearly separable). */
export function separableRows(n: number, seed: number): Record<string, Scalar>[] {
  const random = mulberry32(seed);
  const rows: Record<string, Scalar>[] = [];
  while (rows.length < n) {
    const a = random() * 4 - 2;
    const b = random() * 4 - 2;
    if (Math.abs(a + b) < 0.3) continue;
    rows.push({ a, b, noise: random(), label: a + b > 0 ? 'yes' : 'no' });
  }
  return rows;
}

/** Points around planted centres, σ 1, `perCluster` each, with their true cluster index. */
export const BLOB_CENTRES = [
  [0, 0],
  [10, 0],
  [0, 10],
];
export function blobRows(perCluster: number, seed: number, centres: number[][] = BLOB_CENTRES): Record<string, Scalar>[] {
  const random = mulberry32(seed);
  const normal = gaussian(random);
  const rows: Record<string, Scalar>[] = [];
  centres.forEach((c, k) => {
    for (let i = 0; i < perCluster; i++) rows.push({ u: c[0]! + normal(), v: c[1]! + normal(), truth: k });
  });
  return rows;
}
