import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { newId } from '@dap/contracts';
import { DatasetStore } from '@dap/datasets';
import { createLogger } from '@dap/logger';
import { WorkerPool, WorkerJobError, WorkerTimeoutError } from './worker-pool.ts';
import type { TrainJob, TrainJobResult } from './train.worker.ts';
import { BLOB_CENTRES, blobRows, LINEAR_FEATURES, LINEAR_TARGET, linearRows, tableOf } from '../domain/training/synthetic-data.ts';
import { encodeRecord } from '../domain/training/encoding.ts';
import { estimate } from '../domain/training/trained-model.ts';

const logger = createLogger({ name: 'train-worker-test', level: 'silent' });
const limits = { maxClasses: 50, silhouetteSample: 300 };
let pool: WorkerPool<TrainJob, TrainJobResult>;

beforeAll(async () => {
  const started = await WorkerPool.start<TrainJob, TrainJobResult>({ name: 'train', module: '@dap/models/train-worker', size: 1, logger });
  if (!started) throw new Error('the training worker did not start');
  pool = started;
});
afterAll(() => pool?.stop());

/** Adjusted Rand index, from the contingency table (Hubert & Arabie), written here independently. */
function adjustedRand(a: readonly number[], b: readonly number[]): number {
  const c2 = (n: number) => (n * (n - 1)) / 2;
  const table = new Map<string, number>();
  const rowsA = new Map<number, number>();
  const colsB = new Map<number, number>();
  a.forEach((x, i) => {
    table.set(`${x},${b[i]}`, (table.get(`${x},${b[i]}`) ?? 0) + 1);
    rowsA.set(x, (rowsA.get(x) ?? 0) + 1);
    colsB.set(b[i]!, (colsB.get(b[i]!) ?? 0) + 1);
  });
  const index = [...table.values()].reduce((s, n) => s + c2(n), 0);
  const sumA = [...rowsA.values()].reduce((s, n) => s + c2(n), 0);
  const sumB = [...colsB.values()].reduce((s, n) => s + c2(n), 0);
  const expected = (sumA * sumB) / c2(a.length);
  return (index - expected) / ((sumA + sumB) / 2 - expected);
}

describe('the training worker', () => {
  it('k-means finds planted clusters (ARI ≥ 0.95, centroids within 0.5 of the centres)', async () => {
    const rows = blobRows(100, 5);
    const table = tableOf(rows);
    const job: TrainJob = {
      spec: {
        type: 'kmeans',
        target: null,
        features: [
          { name: 'u', kind: 'numeric' },
          { name: 'v', kind: 'numeric' },
        ],
        hyperparameters: { seed: 1, testFraction: 0.2, maxCategories: 20, k: 3, maxIterations: 100 },
      },
      data: { kind: 'table', table },
      limits,
    };
    const { outcome } = await pool.run(job);
    const artifact = outcome.artifact;
    const assigned = rows.map((r) => {
      const e = estimate(
        artifact,
        encodeRecord(artifact.encoder, (n) => r[n]),
      );
      return e.task === 'clustering' ? e.cluster : -1;
    });
    expect(
      adjustedRand(
        rows.map((r) => r.truth as number),
        assigned,
      ),
    ).toBeGreaterThanOrEqual(0.95);
    const centroids = (outcome.parameters.centroids as { u: number; v: number }[]).map((c) => [c.u, c.v]);
    for (const centre of BLOB_CENTRES) {
      const closest = Math.min(...centroids.map((c) => Math.hypot(c[0]! - centre[0]!, c[1]! - centre[1]!)));
      expect(closest).toBeLessThan(0.5);
    }
    const ev = outcome.evaluation as { inertia: number; silhouette: number; trainInertia: number; clusterSizes: number[] };
    expect(ev.silhouette).toBeGreaterThan(0.7);
    expect(ev.clusterSizes.reduce((s, n) => s + n, 0)).toBe(240);
    // Held-out inertia in z-score units: each of 60 points adds about 2 × σ² / var(u) = 2 / 23.2 ≈ 0.086.
    expect(ev.inertia).toBeGreaterThan(60 * 0.086 * 0.5);
    expect(ev.inertia).toBeLessThan(60 * 0.086 * 2);
  });

  it('reads the training rows from a Parquet file, capping them with a deterministic sample', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'models-train-'));
    const store = await DatasetStore.open(dir);
    try {
      const accountId = newId('acct');
      const sourceId = newId('src');
      const rows = linearRows(600, 8, 0.1);
      await store.stage(accountId, sourceId, 'ndjson', rows.map((r) => JSON.stringify(r)).join('\n'));
      const ingested = await store.ingest(accountId, sourceId, 'ndjson');
      const file = (await store.currentFile(accountId, sourceId))!;
      expect(ingested.rowCount).toBe(600);
      const job = (maxRows: number): TrainJob => ({
        spec: {
          type: 'linear_regression',
          target: LINEAR_TARGET,
          features: [...LINEAR_FEATURES],
          hyperparameters: { seed: 3, testFraction: 0.2, maxCategories: 20 },
        },
        data: { kind: 'parquet', file, maxRows },
        limits,
      });
      const all = await pool.run(job(10_000));
      expect(all.rows).toEqual({ available: 600, used: 600 });
      expect((all.outcome.parameters.coefficients as Record<string, number>).x1).toBeCloseTo(2, 1);
      const capped = await pool.run(job(250));
      expect(capped.rows).toEqual({ available: 600, used: 250 });
      expect(capped.outcome.rows).toEqual({ train: 200, test: 50 });
      const again = await pool.run(job(250));
      expect(again.outcome.parameters).toEqual(capped.outcome.parameters);
      // A missing column is the caller's problem, reported without our paths.
      const bad = await pool.run({ ...job(100), spec: { ...job(100).spec, features: [{ name: 'nope', kind: 'numeric' }] } }).catch((e: unknown) => e);
      expect(bad).toBeInstanceOf(WorkerJobError);
      expect((bad as WorkerJobError).expected).toBe(true);
      expect((bad as Error).message).not.toContain(dir);
    } finally {
      store.duck.close();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('cancels a job inside a DuckDB read without taking the process down, then serves the next job', async () => {
    // Terminating a thread while DuckDB works natively aborts the whole process; the pool must wait for the
    // read to be interrupted instead. A file big enough that the read is still running at the time limit:
    const dir = await mkdtemp(join(tmpdir(), 'models-cancel-'));
    const store = await DatasetStore.open(dir);
    try {
      const file = join(dir, 'big.parquet');
      await store.duck.run(`COPY (SELECT range::DOUBLE AS x, (range % 7)::DOUBLE AS y FROM range(4000000)) TO '${file}' (FORMAT parquet)`);
      const job: TrainJob = {
        spec: {
          type: 'linear_regression',
          target: { name: 'y', kind: 'numeric' },
          features: [{ name: 'x', kind: 'numeric' }],
          hyperparameters: { seed: 1, testFraction: 0.2, maxCategories: 20 },
        },
        data: { kind: 'parquet', file, maxRows: 100_000 },
        limits,
      };
      const started = Date.now();
      await expect(pool.run(job, { timeoutMs: 150 })).rejects.toBeInstanceOf(WorkerTimeoutError);
      // Refused at its limit, not when the read ends: uninterrupted, this job runs for seconds.
      expect(Date.now() - started).toBeLessThan(1_000);
      const next = await pool.run({
        spec: {
          type: 'linear_regression',
          target: { name: 'y', kind: 'numeric' },
          features: [{ name: 'x1', kind: 'numeric' }],
          hyperparameters: { seed: 1, testFraction: 0.2, maxCategories: 20 },
        },
        data: { kind: 'table', table: tableOf(linearRows(50, 2)) },
        limits,
      });
      expect(next.outcome.rows).toEqual({ train: 40, test: 10 });
    } finally {
      store.duck.close();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('stops a job at its time limit and keeps serving with a fresh worker', async () => {
    const rows = separable(3000);
    const job: TrainJob = {
      spec: {
        type: 'random_forest_classifier',
        target: { name: 'label', kind: 'categorical' },
        features: [
          { name: 'a', kind: 'numeric' },
          { name: 'b', kind: 'numeric' },
        ],
        hyperparameters: { seed: 1, testFraction: 0.2, maxCategories: 20, nEstimators: 200, maxDepth: 20, maxFeatures: 1, minSamplesLeaf: 1, sampleRows: 2400 },
      },
      data: { kind: 'table', table: tableOf(rows) },
      limits,
    };
    await expect(pool.run(job, { timeoutMs: 300 })).rejects.toBeInstanceOf(WorkerTimeoutError);
    const small = {
      ...job,
      data: { kind: 'table' as const, table: tableOf(rows.slice(0, 60)) },
      spec: { ...job.spec, hyperparameters: { ...job.spec.hyperparameters, nEstimators: 2, sampleRows: 50 } },
    } as TrainJob;
    const ok = await pool.run(small, { timeoutMs: 20_000 });
    expect(ok.outcome.rows.train).toBe(48);
  });
});

function separable(n: number) {
  return Array.from({ length: n }, (_, i) => {
    const a = Math.sin(i * 12.9898) * 2;
    const b = Math.cos(i * 78.233) * 2;
    return { a, b, label: a + b > 0 ? 'yes' : 'no' };
  });
}
