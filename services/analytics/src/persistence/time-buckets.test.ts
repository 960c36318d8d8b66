import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { newId, querySchema, type AnalyticsQuery } from '@dap/contracts';
import { DatasetStore } from '@dap/datasets';
import { compileQuery } from '../domain/query-compiler.ts';
import { timeSpan } from '../domain/scan-estimate.ts';
import { QueryRunner } from './query.runner.ts';

/*
 * Time-zone buckets come two ways: a tree of the zone's offsets over the file's time span (fast; used when the
 * Parquet statistics give the span), or DuckDB's ICU per row (without statistics). Both must agree exactly,
 * zones with half-hour offsets and half-hour daylight saving included.
 */
describe('time-zone buckets: the offset tree and ICU agree', () => {
  let dir: string;
  let store: DatasetStore;
  let runner: QueryRunner;
  let file: string;
  let span: { from: number; to: number } | null;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'analytics-tz-'));
    store = await DatasetStore.open(join(dir, 'datasets'));
    const [acct, src] = [newId('acct'), newId('src')];
    const lines: string[] = [];
    // Every 47 minutes through 2024, and a few in 1990 (other rules then) so the span holds decades of changes.
    for (let t = Date.UTC(2024, 0, 1); t < Date.UTC(2025, 0, 1); t += 47 * 60_000) lines.push(`{"v": ${t % 7}, "ts": "${new Date(t).toISOString()}"}\n`);
    for (let t = Date.UTC(1990, 2, 20); t < Date.UTC(1990, 3, 10); t += 300 * 60_000) lines.push(`{"v": 1, "ts": "${new Date(t).toISOString()}"}\n`);
    await store.stage(acct, src, 'ndjson', lines);
    file = (await store.ingest(acct, src, 'ndjson')).file;
    runner = await QueryRunner.open({ datasetDir: join(dir, 'datasets'), memoryLimit: '256MB', threads: 2 });
    span = timeSpan(await runner.layout(file), 'ts');
  });

  afterAll(async () => {
    runner.close();
    store.duck.close();
    await rm(dir, { recursive: true, force: true });
  });

  const SCHEMA = [
    { name: 'v', type: 'integer' },
    { name: 'ts', type: 'timestamp' },
  ] as const;

  it('reads the time span from the statistics', () => {
    expect(span).toEqual({ from: Date.UTC(1990, 2, 20), to: expect.any(Number) });
    expect(span!.to).toBeGreaterThan(Date.UTC(2024, 11, 31, 23));
  });

  it.each([
    ['Europe/Berlin', 'hour'],
    ['Europe/Berlin', 'day'],
    ['America/New_York', 'week'],
    ['America/New_York', 'month'],
    ['Asia/Kolkata', 'hour'],
    ['Australia/Lord_Howe', 'hour'],
    ['Australia/Lord_Howe', 'day'],
    ['America/Sao_Paulo', 'year'],
  ])('%s by %s', async (timezone, granularity) => {
    const q = querySchema.parse({
      sourceId: newId('src'),
      measures: [{ op: 'count' }, { op: 'sum', field: 'v' }],
      timeDimension: { field: 'ts', granularity, timezone, weekStartsOn: 0 },
      limit: 10_000,
    }) as AnalyticsQuery;
    const tree = compileQuery(q, SCHEMA, file, { timeSpan: span });
    const icu = compileQuery(q, SCHEMA, file);
    // Positive control: the two really are different SQL.
    expect(tree.sql).toContain('to_minutes');
    expect(icu.sql).not.toContain('to_minutes');
    const [a, b] = await Promise.all([runner.run(tree.sql, tree.params, { timeoutMs: 60_000 }), runner.run(icu.sql, icu.params, { timeoutMs: 60_000 })]);
    expect(a.rows.length).toBeGreaterThan(1);
    expect(a.rows).toEqual(b.rows);
  });
});
