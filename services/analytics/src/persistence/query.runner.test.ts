import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { newId } from '@dap/contracts';
import { DatasetStore, isVanishedFileError } from '@dap/datasets';
import { QueryInterruptedError, QueryRunner } from './query.runner.ts';

describe('QueryRunner', () => {
  let dir: string;
  let store: DatasetStore;
  let runner: QueryRunner;
  let file: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'analytics-runner-'));
    store = await DatasetStore.open(join(dir, 'datasets'));
    const [acct, src] = [newId('acct'), newId('src')];
    await store.stage(acct, src, 'ndjson', [
      '{"n": 1, "s": "a", "ts": "2024-01-05T10:00:00Z", "d": "2024-02-01", "x": 1.5}\n',
      '{"n": 2, "s": null, "ts": "2024-01-06T11:30:00Z", "d": "2024-03-01", "x": null}\n',
    ]);
    file = (await store.ingest(acct, src, 'ndjson')).file;
    runner = await QueryRunner.open({ datasetDir: join(dir, 'datasets'), memoryLimit: '256MB', threads: 2 });
  });

  afterAll(async () => {
    runner.close();
    store.duck.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('reports a data file removed under it as a vanished file (what readers retry on), a bad query as not', async () => {
    const gone = join(dir, 'datasets', 'acct_00000000000000000000000000', 'gone.parquet');
    const err = await runner.run('SELECT count(*) AS c FROM read_parquet($1)', [gone], { timeoutMs: 5_000 }).catch((e: unknown) => e);
    expect((err as Error).message).toMatch(/^IO Error/);
    expect(isVanishedFileError(err)).toBe(true);
    const bad = await runner.run('SELECT nope FROM read_parquet($1)', [file], { timeoutMs: 5_000 }).catch((e: unknown) => e);
    expect((bad as Error).message).toMatch(/nope/);
    expect(isVanishedFileError(bad)).toBe(false);
  });

  it('binds $n parameters and returns API types: numbers as numbers, times as ISO-8601 UTC', async () => {
    const r = await runner.run(
      'SELECT sum(n) AS total, count(*) AS c, min(ts) AS first, max(d) AS last_day, avg(x) AS ax FROM read_parquet($1) WHERE s IS NULL OR s = $2',
      [file, 'a'],
      { timeoutMs: 5_000 },
    );
    expect(r.columns).toEqual([
      { name: 'total', type: 'integer' },
      { name: 'c', type: 'integer' },
      { name: 'first', type: 'timestamp' },
      { name: 'last_day', type: 'timestamp' },
      { name: 'ax', type: 'number' },
    ]);
    expect(r.rows).toEqual([[3, 2, '2024-01-05T10:00:00.000Z', '2024-03-01T00:00:00.000Z', 1.5]]);
  });

  it('keeps integers past 2^53 exact, as strings of digits, and safe ones as numbers', async () => {
    const r = await runner.run(
      `SELECT 1790000000000000001::BIGINT AS snowflake, (-9223372036854775807)::BIGINT AS low, sum(x) AS total, 9007199254740991::BIGINT AS safe, 2::HUGEINT AS small
       FROM (VALUES (9223372036854775807::BIGINT), (9223372036854775807::BIGINT)) t(x)`,
      [],
      { timeoutMs: 5_000 },
    );
    expect(r.columns.map((c) => c.type)).toEqual(['integer', 'integer', 'integer', 'integer', 'integer']);
    expect(r.rows).toEqual([['1790000000000000001', '-9223372036854775807', '18446744073709551614', 9007199254740991, 2]]);
  });

  it('interrupts a query that runs past its time limit, with a clear reason', async () => {
    const started = Date.now();
    const err = await runner.run('SELECT count(*) FROM range(10000000000) a, range(1000) b', [], { timeoutMs: 200 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(QueryInterruptedError);
    expect((err as QueryInterruptedError).reason).toBe('timeout');
    expect((err as Error).message).toMatch(/longer than its 200 ms time limit/);
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('cancels a running query when its signal aborts', async () => {
    const ctl = new AbortController();
    setTimeout(() => ctl.abort(), 100);
    const err = await runner.run('SELECT count(*) FROM range(10000000000) a, range(1000) b', [], { timeoutMs: 60_000, signal: ctl.signal }).catch((e: unknown) => e);
    expect((err as QueryInterruptedError).reason).toBe('aborted');
  });

  it('caches Parquet metadata across queries', async () => {
    const r = await runner.run("SELECT current_setting('parquet_metadata_cache') AS on", [], { timeoutMs: 5_000 });
    expect(r.rows).toEqual([[true]]);
  });

  it('reads files only under the dataset directory and cannot be reconfigured', async () => {
    await expect(runner.run('SELECT * FROM read_csv($1)', ['/etc/passwd'], { timeoutMs: 5_000 })).rejects.toThrow(/Permission Error/);
    await expect(runner.run('SET enable_external_access = true', [], { timeoutMs: 5_000 })).rejects.toThrow(/locked/);
  });
});
