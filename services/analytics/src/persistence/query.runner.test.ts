import { access, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { newId } from '@dap/contracts';
import { DatasetStore, Duck, isVanishedFileError } from '@dap/datasets';
import { QueryInterruptedError, QueryRunner, cellConverter, rawCellConverter } from './query.runner.ts';
import { columns } from '@dap/testing';

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
    expect(r.columns).toEqual(columns({ total: 'integer', c: 'integer', first: 'timestamp', last_day: 'timestamp', ax: 'number' }));
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

  it('rounds doubles a measure computed to 15 significant digits, keeps stored doubles, floats shortest and decimals exact', async () => {
    const sql = `SELECT sum(x) AS s, avg(x) AS a, quantile_cont(x, 0.9) AS p, min(x) AS lo, 0.1::FLOAT AS f, sum(d) AS sd, 123456789012345678.91::DECIMAL(38, 2) AS wide, 318.30::DECIMAL(10, 2) AS dec
       FROM (VALUES (0.1::DOUBLE, 1.10::DECIMAL(10, 2)), (0.2, 2.21)) t(x, d)`;
    // Positive control: the raw doubles carry the noise this rounds away.
    const raw = await runner.run(sql, [], { timeoutMs: 5_000 });
    expect(raw.rows[0]!.slice(0, 3)).toEqual([0.30000000000000004, 0.15000000000000002, 0.19000000000000003]);
    const r = await runner.run(sql, [], { timeoutMs: 5_000, computed: [true, true, true, true, false, true, false, false] });
    expect(r.columns.map((c) => c.type)).toEqual(Array(8).fill('number'));
    expect(r.rows).toEqual([[0.3, 0.15, 0.19, 0.1, 0.1, 3.31, '123456789012345678.91', 318.3]]);
    // A stored double is returned as stored, even where 15 digits would change it.
    const stored = await runner.run('SELECT 0.30000000000000004::DOUBLE AS x', [], { timeoutMs: 5_000, computed: [false] });
    expect(stored.rows).toEqual([[0.30000000000000004]]);
  });

  it('reads cells straight from DuckDB vectors exactly as through node-api JSON values, for every column type and across chunks', async () => {
    // Three chunks of rows, a null in every column somewhere, and the edge values of each conversion.
    const sql = `SELECT (i % 100)::TINYINT AS ti, (i * 3)::SMALLINT AS si, (i * 100003)::INTEGER AS ii, (i * 7)::UINTEGER AS ui,
        CASE WHEN i % 5 = 0 THEN NULL WHEN i % 5 = 1 THEN (i * 1844674407370955)::BIGINT ELSE (i - 2500)::BIGINT END AS bi,
        i::UBIGINT * 3000000000000000 AS ub, i::HUGEINT * 100000000000000000000 - 7 AS hi,
        CASE i % 8 WHEN 0 THEN 'NaN'::DOUBLE WHEN 1 THEN 'Infinity'::DOUBLE WHEN 2 THEN '-Infinity'::DOUBLE WHEN 3 THEN -0.0::DOUBLE
          WHEN 4 THEN NULL WHEN 5 THEN i * 1e21 WHEN 6 THEN i * 1e-9 ELSE i * 0.1 + 0.2 END AS d,
        i::DOUBLE * 0.1 + 0.2 AS stored, (i * 0.1)::FLOAT AS f, CASE WHEN i % 9 = 0 THEN NULL ELSE (i * 1.01)::DECIMAL(18, 2) END AS dec,
        (i * 1234567.891)::DECIMAL(38, 3) AS wide, CASE WHEN i % 6 = 0 THEN NULL ELSE i % 3 = 0 END AS b,
        CASE WHEN i % 4 = 0 THEN NULL ELSE 'é"\\' || i END AS s, DATE '2024-01-01' + i::INTEGER AS day,
        TIMESTAMP '2024-01-01 00:00:00.123' + i * INTERVAL 1 MINUTE AS ts, (TIMESTAMP '2024-01-01' + i * INTERVAL 1 SECOND)::TIMESTAMP_NS AS ns,
        TIMESTAMPTZ '2024-05-06 07:08:09.5+00' AS tz, TIME '10:11:12' AS tm,
        ('00000000-0000-0000-0000-' || lpad(i::VARCHAR, 12, '0'))::UUID AS id
      FROM range(5000) t(i) ORDER BY i`;
    const computed = [false, false, false, false, true, true, true, true, false, true, true, true, false, false, false, false, false, false, false, false];
    const duck = await Duck.open({ threads: 1 });
    const { conn, release } = await duck.connect();
    try {
      // The previous path: node-api's JSON values, then the column's converter cell by cell.
      const previous = async (q: string, flags: boolean[]) => {
        const reader = await conn.runAndReadAll(q);
        const convert = reader.columnTypes().map((t, i) => cellConverter(t.toString(), flags[i] ?? false));
        return reader.getRowsJson().map((row) => row.map((v, i) => convert[i]!(v)));
      };
      const now = await runner.run(sql, [], { timeoutMs: 30_000, computed });
      const before = await previous(sql, computed);
      expect(now.rows).toHaveLength(5000);
      // Every column of this result is read straight from the vectors; a list is not.
      const types = (await conn.runAndReadAll(`${sql} LIMIT 0`)).columnTypes().map((t) => t.toString());
      expect(types.filter((t) => rawCellConverter(t) === null)).toEqual([]);
      expect(rawCellConverter('BIGINT[]')).toBeNull();
      expect(now.rows).toEqual(before);
      expect(JSON.stringify(now.rows)).toBe(JSON.stringify(before));
      // A stream (exports) reads its chunks the same way.
      const streamed = [];
      for await (const part of runner.stream(sql, [], { computed })) streamed.push(...part.rows);
      expect(JSON.stringify(streamed)).toBe(JSON.stringify(before));
      // Positive controls: the edge values are there (past 2^53 as digits, non-finite doubles, nulls, rounding).
      const row = (i: number) => Object.fromEntries(now.columns.map((c, k) => [c.name, now.rows[i]![k]]));
      expect(row(4001)).toMatchObject({ bi: '7380542303891190955', ub: '12003000000000000000', hi: '400099999999999999999993' });
      expect([row(8).d, row(9).d, row(10).d, row(11).d, row(12).d, row(13).d, row(14).d]).toEqual([NaN, Infinity, -Infinity, -0, null, 1.3e22, 1.4e-8]);
      expect([row(7).d, row(7).stored, row(0).s, row(1).s, row(0).b, row(3).b]).toEqual([0.9, 0.9000000000000001, null, 'é"\\1', null, true]);
      expect([row(1).ts, row(1).tz, row(2).day, row(3).id]).toEqual([
        '2024-01-01T00:01:00.123Z',
        '2024-05-06T07:08:09.500Z',
        '2024-01-03T00:00:00.000Z',
        '00000000-0000-0000-0000-000000000003',
      ]);
      // A nested column (no direct reading) takes node-api's JSON values, with the same cells.
      const nested = 'SELECT i AS n, [i, i + 1] AS l, i::BIGINT * 5000000000000 AS big FROM range(3000) t(i) ORDER BY i';
      const nestedNow = await runner.run(nested, [], { timeoutMs: 30_000 });
      expect(nestedNow.rows).toEqual(await previous(nested, []));
      const nestedStreamed = [];
      for await (const part of runner.stream(nested, [])) nestedStreamed.push(...part.rows);
      expect(nestedStreamed).toEqual(nestedNow.rows);
      expect(nestedNow.rows[2]).toEqual([2, '["2","3"]', 10000000000000]);
    } finally {
      release();
      duck.close();
    }
  });

  it('streams a result larger than a chunk in bounded parts, converted like run', async () => {
    let rows = 0;
    let largest = 0;
    let last = -1;
    let ordered = true;
    for await (const part of runner.stream('SELECT range AS n, range * 0.1 + 0.2 AS x FROM range(25000) ORDER BY n DESC', [], { computed: [false, true] })) {
      expect(part.columns).toEqual([
        { name: 'n', type: 'integer' },
        { name: 'x', type: 'number' },
      ]);
      for (const [n, x] of part.rows) {
        if (last !== -1 && (n as number) >= last) ordered = false;
        last = n as number;
        expect(x).toBe(Number(((n as number) * 0.1 + 0.2).toPrecision(15)));
      }
      rows += part.rows.length;
      largest = Math.max(largest, part.rows.length);
    }
    expect([rows, ordered, last]).toEqual([25000, true, 0]);
    expect(largest).toBeLessThanOrEqual(2048);
    // An empty result still gives its columns once.
    const parts = [];
    for await (const part of runner.stream('SELECT 1 AS one WHERE false', [])) parts.push(part);
    expect(parts).toEqual([{ columns: [{ name: 'one', type: 'integer' }], rows: [] }]);
  });

  it('writes a Parquet export in order, rounding computed doubles and keeping 128-bit integers exact, then discards it', async () => {
    const file = await runner.toParquet('SELECT range AS n, sum(range::INTEGER) AS total, avg(range) + 0.1 + 0.2 AS x FROM range(3) GROUP BY 1 ORDER BY 1 DESC', [], {
      computed: [false, true, true],
    });
    const r = await store.duck.run(`SELECT n, total, x, typeof(total) AS t FROM read_parquet('${file}')`);
    expect(r.rows).toEqual([
      { n: 2, total: 2, x: 2.3, t: 'DECIMAL(38,0)' },
      { n: 1, total: 1, x: 1.3, t: 'DECIMAL(38,0)' },
      { n: 0, total: 0, x: 0.3, t: 'DECIMAL(38,0)' },
    ]);
    await runner.discard(file);
    await expect(access(file)).rejects.toThrow(/ENOENT/);
    // It writes nowhere else.
    await expect(runner.run(`COPY (SELECT 1) TO '${join(dir, 'x.parquet')}' (FORMAT parquet)`, [], { timeoutMs: 5_000 })).rejects.toThrow(/Permission Error/);
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
