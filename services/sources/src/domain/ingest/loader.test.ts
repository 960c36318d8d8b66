import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { Writable } from 'node:stream';
import { join } from 'node:path';
import { newId } from '@dap/contracts';
import { DatasetStore, sqlLiteral } from '@dap/datasets';
import { createLogger } from '@dap/logger';
import { CSV_SAMPLE_ROWS, DatasetLoader, LoadError, utcTimestamp, type LoadRequest } from './loader.ts';

let root: string;
let store: DatasetStore;
let loader: DatasetLoader;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'dap-loader-test-'));
  store = await DatasetStore.open(root, { memoryLimit: '256MB' });
  loader = new DatasetLoader(store, { parallelMaxBytes: 64 * 1024 * 1024, logger: createLogger({ name: 'test', level: 'silent' }) });
});
afterAll(async () => {
  store.duck.close();
  await rm(root, { recursive: true, force: true });
});

async function load(format: 'csv' | 'ndjson' | 'json', content: string, extra: Partial<LoadRequest> = {}) {
  const accountId = newId('acct');
  const sourceId = newId('src');
  await store.stage(accountId, sourceId, format, content);
  const result = await loader.load({ accountId, sourceId, format, ...extra });
  const rows = (await store.duck.run(`SELECT * FROM read_parquet(${sqlLiteral(result.file)})`)).rows;
  const types = Object.fromEntries(result.schema.map((c) => [c.name, c.type]));
  return { result, rows, types };
}

async function failure(format: 'csv' | 'ndjson' | 'json', content: string, extra: Partial<LoadRequest> = {}): Promise<string> {
  try {
    await load(format, content, extra);
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error('the data was loaded');
}

describe('CSV schema inference', () => {
  it('reads timestamps in ISO and common formats, all as UTC timestamps', async () => {
    const csv = [
      'plain,iso_z,offset,slash,us,eu,dots,mixed_iso',
      '2024-01-02 03:04:05,2024-01-02T03:04:05Z,2024-01-02T05:04:05+02:00,2024/01/02,01/02/2024 03:04,13/02/2024,02.01.2024 10:30,2024-01-02T03:04:05Z',
      '2024-02-03 13:14:15,2024-02-03T13:14:15Z,2024-02-03T15:14:15+02:00,2024/02/03,12/31/2024 23:59,01/03/2024,31.12.2024 23:59,2024-02-03 13:14:15.250',
    ].join('\n');
    const { types, rows } = await load('csv', `${csv}\n`);
    expect(types).toEqual({
      plain: 'timestamp',
      iso_z: 'timestamp',
      offset: 'timestamp',
      slash: 'timestamp',
      us: 'timestamp',
      eu: 'timestamp',
      dots: 'timestamp',
      mixed_iso: 'timestamp',
    });
    expect(rows[0]).toEqual({
      plain: '2024-01-02 03:04:05',
      iso_z: '2024-01-02 03:04:05',
      offset: '2024-01-02 03:04:05',
      slash: '2024-01-02',
      us: '2024-01-02 03:04:00',
      eu: '2024-02-13 00:00:00',
      dots: '2024-01-02 10:30:00',
      mixed_iso: '2024-01-02 03:04:05',
    });
    expect(rows[1]!.us).toBe('2024-12-31 23:59:00');
    expect(rows[1]!.eu).toBe('2024-03-01 00:00:00');
    expect(rows[1]!.mixed_iso).toBe('2024-02-03 13:14:15.25');
  });

  it('widens mixed-type columns: integers and decimals to number, numbers and words to string', async () => {
    const { types, rows } = await load('csv', 'a,b,c,d,e\n1,1,true,2024-01-01,\n2.5,x,1,not a date,\n');
    expect(types).toEqual({ a: 'number', b: 'string', c: 'string', d: 'string', e: 'string' });
    expect(rows.map((r) => r.b)).toEqual(['1', 'x']);
  });

  it('widens a column whose first odd value comes after the sampled rows, instead of failing', async () => {
    let csv = 'id,v,w\n';
    for (let i = 0; i < CSV_SAMPLE_ROWS + 5_000; i++) csv += `${i},${i},${i}\n`;
    csv += '999999,oops,1.5\n';
    const { types, result, rows } = await load('csv', csv);
    expect(result.rowCount).toBe(CSV_SAMPLE_ROWS + 5_001);
    expect(types).toEqual({ id: 'integer', v: 'string', w: 'number' });
    expect(rows.at(-1)).toEqual({ id: 999999, v: 'oops', w: 1.5 });
    expect(rows[10]).toEqual({ id: 10, v: '10', w: 10 });
  });

  /** Past DuckDB's sample: the sniffer sees only the first CSV_SAMPLE_ROWS rows. */
  const PAST_SAMPLE = CSV_SAMPLE_ROWS + 10_000;
  /** Every value of a column as the Parquet file holds it, as text (a double or a huge integer as written). */
  const texts = async (file: string, column: string) =>
    (await store.duck.run(`SELECT CAST(${column} AS VARCHAR) AS v FROM read_parquet(${sqlLiteral(file)})`)).rows.map((r) => r.v);

  it('widens an integer column to number when a decimal comes after the sample, keeping every value exact', async () => {
    let csv = 'n\n';
    for (let i = 0; i < PAST_SAMPLE; i++) csv += `${i * 7}\n`;
    const { types, result } = await load('csv', `${csv}9.5\n1e3\n12\n`);
    expect(types).toEqual({ n: 'number' });
    expect(result.rowCount).toBe(PAST_SAMPLE + 3);
    const values = await texts(result.file, 'n');
    expect(values.slice(-3)).toEqual(['9.5', '1000.0', '12.0']);
    expect(values.slice(0, PAST_SAMPLE).every((v, i) => v === `${i * 7}.0`)).toBe(true);
  });

  it('never lets DuckDB change a value past the sample silently: each such column widens instead', async () => {
    const lines = ['id,dec,exp,flag,bigdec,zip,plus,at,plain,pad'];
    for (let i = 0; i < PAST_SAMPLE; i++) {
      // Row 7 is all empty fields but its id: NULLs pass every check.
      if (i === 7) lines.push('7,,,,,,,,,');
      else lines.push(`${i},${i},${i},${i % 2 === 0},${i === 5 ? '9007199254740993' : i},${10_000 + i},${i},2024-01-02 03:04:05,${i}, ${i} `);
    }
    lines.push(`${PAST_SAMPLE},1.5,1e3,1,9.5,01234,+3,2024-01-02 03:04:05-02:00,7, -0 `);
    const { types, rows, result } = await load('csv', `${lines.join('\n')}\n`);
    expect(types).toEqual({
      id: 'integer',
      dec: 'number',
      exp: 'number',
      flag: 'string',
      bigdec: 'string',
      zip: 'string',
      plus: 'string',
      at: 'timestamp',
      plain: 'integer',
      pad: 'integer',
    });
    expect(rows.at(-1)).toEqual({ id: PAST_SAMPLE, dec: 1.5, exp: 1000, flag: '1', bigdec: '9.5', zip: '01234', plus: '+3', at: '2024-01-02 05:04:05', plain: 7, pad: 0 });
    expect(rows[4]).toEqual({ id: 4, dec: 4, exp: 4, flag: 'true', bigdec: '4', zip: '10004', plus: '4', at: '2024-01-02 03:04:05', plain: 4, pad: 4 });
    expect(rows[7]).toEqual({ id: 7, dec: null, exp: null, flag: null, bigdec: null, zip: null, plus: null, at: null, plain: null, pad: null });
    // A double cannot hold 9007199254740993, so the column with a decimal keeps its values as text.
    expect((await texts(result.file, 'bigdec'))[5]).toBe('9007199254740993');
  });

  it('loads a file whose values all fit their sampled types in one checked COPY (spaces around integers fit)', async () => {
    const lines: string[] = [];
    const logger = createLogger({ name: 'test', level: 'debug', destination: new Writable({ write: (chunk: Buffer, _enc, done) => (lines.push(chunk.toString()), done()) }) });
    const logged = new DatasetLoader(store, { parallelMaxBytes: 64 * 1024 * 1024, logger });
    let csv = 'i,p,n,b,t,tz\n';
    for (let i = 0; i < PAST_SAMPLE; i++) csv += `${i - 5}, ${i} ,${i / 4},${i % 2 === 0},2024-01-02 03:04:05.${i % 1000},2024-01-02T03:04:05+01:00\n`;
    const accountId = newId('acct');
    const sourceId = newId('src');
    await store.stage(accountId, sourceId, 'csv', csv);
    const result = await logged.load({ accountId, sourceId, format: 'csv' });
    expect(Object.fromEntries(result.schema.map((c) => [c.name, c.type]))).toEqual({ i: 'integer', p: 'integer', n: 'number', b: 'boolean', t: 'timestamp', tz: 'timestamp' });
    expect(lines.some((l) => l.includes('dataset loaded'))).toBe(true);
    expect(lines.filter((l) => /measuring|cannot read/.test(l))).toEqual([]);
    const rows = (await store.duck.run(`SELECT * FROM read_parquet(${sqlLiteral(result.file)}) LIMIT 2 OFFSET 1`)).rows;
    expect(rows).toEqual([
      { i: -4, p: 1, n: 0.25, b: false, t: '2024-01-02 03:04:05.1', tz: '2024-01-02 02:04:05' },
      { i: -3, p: 2, n: 0.5, b: true, t: '2024-01-02 03:04:05.2', tz: '2024-01-02 02:04:05' },
    ]);
  });

  it('reads integer, number, boolean and timestamp columns with empty fields as they were sniffed', async () => {
    const { types, rows } = await load('csv', 'i,n,b,t\n1,1.5,true,2024-01-02 03:04:05\n,,,\n-3,-0.25,F,2024-01-03T04:05:06.5Z\n');
    expect(types).toEqual({ i: 'integer', n: 'number', b: 'boolean', t: 'timestamp' });
    expect(rows).toEqual([
      { i: 1, n: 1.5, b: true, t: '2024-01-02 03:04:05' },
      { i: null, n: null, b: null, t: null },
      { i: -3, n: -0.25, b: false, t: '2024-01-03 04:05:06.5' },
    ]);
  });

  it('reads a number column with a value that overflows a double (1e400) as text; an underflow is the nearest double, 0', async () => {
    let csv = 'over,under,ok\n';
    for (let i = 0; i < PAST_SAMPLE; i++) csv += `${i}.5,${i}.5,${i}.5\n`;
    const { types, rows } = await load('csv', `${csv}1e400,1e-400,0.0\ninf,0,-0.0\n`);
    expect(types).toEqual({ over: 'string', under: 'number', ok: 'number' });
    expect(rows.slice(-2)).toEqual([
      { over: '1e400', under: 0, ok: 0 },
      { over: 'inf', under: 0, ok: -0 },
    ]);
    expect(rows[0]).toEqual({ over: '0.5', under: 0.5, ok: 0.5 });
  });

  it('reads timestamps TIMESTAMP_NS cannot hold (9999-12-31, 1500-01-01) as they are, and offsets past the sample as UTC', async () => {
    const lines = ['t,u'];
    for (let i = 0; i < PAST_SAMPLE; i++) lines.push(`2024-01-02 03:04:${String(i % 60).padStart(2, '0')},2024-01-02 03:04:05`);
    lines.push('9999-12-31 23:59:59,1500-01-01 00:00:00', '2024-01-02 03:04:05.123456789,2024-01-02 03:04:05-01:30');
    const { types, rows } = await load('csv', `${lines.join('\n')}\n`);
    expect(types).toEqual({ t: 'timestamp', u: 'timestamp' });
    expect(rows.slice(-2)).toEqual([
      { t: '9999-12-31 23:59:59', u: '1500-01-01 00:00:00' },
      { t: '2024-01-02 03:04:05.123456', u: '2024-01-02 04:34:05' },
    ]);
    expect(rows[1]).toEqual({ t: '2024-01-02 03:04:01', u: '2024-01-02 03:04:05' });
  });

  it('keeps integers beyond 2^53 exact, and integers beyond 64 bits as text rather than rounded doubles', async () => {
    const lines = ['big,late,wide'];
    for (let i = 0; i < PAST_SAMPLE; i++) lines.push(`${i === 5 ? '9007199254740993' : i},${i},${i === 5 ? '123456789012345678901' : i}`);
    lines.push('9223372036854775807,12345678901234567890,1');
    const { types, result } = await load('csv', `${lines.join('\n')}\n`);
    expect(types).toEqual({ big: 'integer', late: 'string', wide: 'string' });
    expect((await texts(result.file, 'big')).filter((_, i) => i === 5 || i === PAST_SAMPLE)).toEqual(['9007199254740993', '9223372036854775807']);
    expect((await texts(result.file, 'late')).at(-1)).toBe('12345678901234567890');
    expect((await texts(result.file, 'wide'))[5]).toBe('123456789012345678901');
  });

  it('reads an integer or boolean column with a later word as text, every value as written (as the README says)', async () => {
    const lines = ['n,b'];
    for (let i = 0; i < PAST_SAMPLE; i++) lines.push(`${i},${i % 2 ? 'true' : 'False'}`);
    lines.push('abc,maybe');
    const { types, rows } = await load('csv', `${lines.join('\n')}\n`);
    expect(types).toEqual({ n: 'string', b: 'string' });
    expect(rows.at(-1)).toEqual({ n: 'abc', b: 'maybe' });
    expect(rows.slice(0, 2)).toEqual([
      { n: '0', b: 'False' },
      { n: '1', b: 'true' },
    ]);
  });

  it('keeps a boolean column boolean when later values are booleans the sniffer knows (yes, T)', async () => {
    let csv = 'b\n';
    for (let i = 0; i < PAST_SAMPLE; i++) csv += i % 2 ? 'true\n' : 'False\n';
    const { types, rows } = await load('csv', `${csv}yes\nT\nno\n`);
    expect(types).toEqual({ b: 'boolean' });
    expect(rows.slice(-3).map((r) => r.b)).toEqual([true, true, false]);
    expect(rows.slice(0, 2).map((r) => r.b)).toEqual([false, true]);
  });

  it('sniffs the whole file when a value past the sample is one DuckDB refuses (a word in a date or number column)', async () => {
    let csv = 'd,n,x\n';
    for (let i = 0; i < PAST_SAMPLE; i++) csv += `2024-01-${String(1 + (i % 28)).padStart(2, '0')},${i},${i}.25\n`;
    const { types, rows } = await load('csv', `${csv}soon,2.5,n/a\n`);
    expect(types).toEqual({ d: 'string', n: 'number', x: 'string' });
    expect(rows.at(-1)).toEqual({ d: 'soon', n: 2.5, x: 'n/a' });
    expect(rows[1]).toEqual({ d: '2024-01-02', n: 1, x: '1.25' });
  });

  it('keeps the file order on all threads (small file), on one (big file) or two (big CSV, when configured)', async () => {
    const threads = async () => Number((await store.duck.run(`SELECT current_setting('threads') AS t`)).rows[0]!.t);
    const allThreads = await threads();
    let csv = 'n,label\n';
    for (let i = 0; i < 700_000; i++) csv += `${i},"row ${i} of the file"\n`;
    const { rows } = await load('csv', csv);
    expect(rows.every((r, i) => r.n === i && r.label === `row ${i} of the file`)).toBe(true);
    const logger = createLogger({ name: 'test', level: 'silent' });
    const accountId = newId('acct');
    const sourceId = newId('src');
    // Past the 8 MiB read buffer, so each thread reads its own part of the file.
    expect(csv.length).toBeGreaterThan(2 * 8 * 1024 * 1024);
    for (const [big, expected] of [
      [new DatasetLoader(store, { parallelMaxBytes: 0, logger }), 1],
      [new DatasetLoader(store, { parallelMaxBytes: 0, largeCsvThreads: 2, logger }), 2],
    ] as const) {
      await store.stage(accountId, sourceId, 'csv', csv);
      const result = await big.load({ accountId, sourceId, format: 'csv' });
      expect(result.rowCount).toBe(700_000);
      expect(await threads()).toBe(expected);
      const read = (await store.duck.run(`SELECT n, label FROM read_parquet(${sqlLiteral(result.file)})`)).rows;
      expect(read.length).toBe(700_000);
      expect(read.every((r, i) => r.n === i && r.label === `row ${i} of the file`)).toBe(true);
    }
    const big = new DatasetLoader(store, { parallelMaxBytes: 0, largeCsvThreads: 2, logger });
    await store.stage(
      accountId,
      sourceId,
      'ndjson',
      rows.slice(0, 1_000).map((r) => JSON.stringify(r) + '\n'),
    );
    expect((await big.load({ accountId, sourceId, format: 'ndjson' })).rowCount).toBe(1_000);
    expect(await threads()).toBe(1);
    await loader.load({ accountId, sourceId, format: 'csv' });
    expect(await threads()).toBe(allThreads);
  });

  it('refuses rows with more fields than the header, anywhere in the file, without silently skipping rows', async () => {
    let csv = 'a,b\n';
    for (let i = 0; i < 40_000; i++) csv += `${i},${i}\n`;
    const late = await failure('csv', `${csv}1,2,3\n`);
    expect(late).toMatch(/^the CSV could not be parsed: /);
    expect(late).not.toContain(root);
    expect(await failure('csv', 'a,b\n1,2\n1,2,3\n4,5\n')).toMatch(/consistent number of columns/);
  });

  it('refuses a quoted value that is never closed, in the sample or past it, naming the line', async () => {
    // DuckDB's sniffer would read such a file with no quote character: quotes kept as data, the line taken in.
    expect(await failure('csv', 'a,b\n1,"x"\n2,"never closed\n3,4\n')).toBe('the CSV could not be parsed: line 3: a quoted value is never closed');
    let csv = 'id,name\n';
    for (let i = 0; i < CSV_SAMPLE_ROWS + 5_000; i++) csv += `${i},"n${i}, x"\n`;
    const late = await failure('csv', `${csv}7,"never closed\n8,y\n`);
    expect(late).toBe(`the CSV could not be parsed: line ${CSV_SAMPLE_ROWS + 5_002}: a quoted value is never closed`);
  });

  it('reads quoted values without their quotes, and a quote inside an unquoted value as data', async () => {
    const { rows, types } = await load('csv', 'a,b,c\n1,"x, ""y""",12" pizza\n2,plain,"q"\n');
    expect(types).toEqual({ a: 'integer', b: 'string', c: 'string' });
    expect(rows).toEqual([
      { a: 1, b: 'x, "y"', c: '12" pizza' },
      { a: 2, b: 'plain', c: 'q' },
    ]);
  });

  it('refuses an empty or binary file', async () => {
    expect(await failure('csv', '')).toBe('the data is empty');
    expect(await failure('csv', 'a,b\n\u0000\u0001,2\n')).toMatch(/NUL/);
  });
});

describe('JSON and NDJSON schema inference', () => {
  it('turns nested values into JSON text, mixed scalars into strings, and mixed ISO timestamps into timestamps', async () => {
    const lines = [
      { id: 1, n: 1, tags: ['a'], meta: { k: 1 }, at: '2024-01-02T03:04:05Z', on: '2024/01/02' },
      { id: 2, n: 'two', tags: [], meta: null, at: '2024-01-02T03:04:05.5+01:00', on: '2024/01/03' },
      { id: 3, n: 3.5, meta: { k: 'x' }, at: '2024-01-02 03:04' },
    ];
    const { types, rows } = await load('ndjson', lines.map((l) => JSON.stringify(l)).join('\n'), { checkFieldNames: true });
    expect(types).toEqual({ id: 'integer', n: 'string', tags: 'string', meta: 'string', at: 'timestamp', on: 'timestamp' });
    expect(rows).toEqual([
      { id: 1, n: '1', tags: '["a"]', meta: '{"k":1}', at: '2024-01-02 03:04:05', on: '2024-01-02 00:00:00' },
      { id: 2, n: 'two', tags: '[]', meta: null, at: '2024-01-02 02:04:05.5', on: '2024-01-03 00:00:00' },
      { id: 3, n: '3.5', tags: null, meta: '{"k":"x"}', at: '2024-01-02 03:04:00', on: null },
    ]);
  });

  it('reads a JSON array file and refuses one that is not an array of objects', async () => {
    const { types, result } = await load('json', '[{"a": 1, "b": true}, {"a": 2, "b": false}]');
    expect(result.rowCount).toBe(2);
    expect(types).toEqual({ a: 'integer', b: 'boolean' });
    expect(await failure('json', '[1, 2, 3]')).toMatch(/.+/);
  });

  it('refuses field names that would be operators, like uploaded JSON does', async () => {
    expect(await failure('ndjson', '{"$where": 1}\n', { checkFieldNames: true })).toMatch(/field name "\$where" is not allowed/);
  });
});

describe('loads with the origin’s column types (databases)', () => {
  const columns = [
    { name: 'id', type: 'BIGINT' as const },
    { name: 'at', type: 'TIMESTAMP' as const },
    { name: 'label', type: 'VARCHAR' as const },
  ];

  it('keeps the given types, even for values that look like something else', async () => {
    const { types, rows } = await load('ndjson', '{"id":1,"at":"2024-01-02 03:04:05.123456","label":"007"}\n', { columns });
    expect(types).toEqual({ id: 'integer', at: 'timestamp', label: 'string' });
    expect(rows).toEqual([{ id: 1, at: '2024-01-02 03:04:05.123456', label: '007' }]);
  });

  it('loads an empty table as zero rows with its columns', async () => {
    const { result, types } = await load('ndjson', '', { columns });
    expect(result.rowCount).toBe(0);
    expect(types).toEqual({ id: 'integer', at: 'timestamp', label: 'string' });
  });

  it('refuses a load with no columns at all', async () => {
    await expect(load('ndjson', '', { columns: [] })).rejects.toBeInstanceOf(LoadError);
  });
});

describe('utcTimestamp', () => {
  it('gives what timezone(UTC) gives for every instant, before the epoch, at the ends of the range and for infinities', async () => {
    await store.duck.run(`SET TimeZone = 'UTC'`); // as the loader's session
    const values = [
      '1969-12-31 23:59:59.999999+00',
      '0001-01-01 00:00:00+00',
      '9999-12-31 23:59:59.999999+00',
      '2024-03-10 02:30:00.123456-05',
      '1500-06-01 12:00:00+02:30',
      'infinity',
      '-infinity',
    ];
    const { rows } = await store.duck.run(
      `SELECT CAST(timezone('UTC', v) AS VARCHAR) AS expected, CAST(${utcTimestamp('v')} AS VARCHAR) AS actual, typeof(${utcTimestamp('v')}) AS type
       FROM (SELECT CAST(unnest(${`[${values.map((v) => sqlLiteral(v)).join(', ')}, NULL]`}) AS TIMESTAMPTZ) AS v)`,
    );
    expect(rows).toHaveLength(values.length + 1);
    for (const r of rows) expect(r.actual).toBe(r.expected);
    expect(rows.map((r) => r.actual)).toEqual([
      '1969-12-31 23:59:59.999999',
      '0001-01-01 00:00:00',
      '9999-12-31 23:59:59.999999',
      '2024-03-10 07:30:00.123456',
      '1500-06-01 09:30:00',
      'infinity',
      '-infinity',
      null,
    ]);
    expect(new Set(rows.map((r) => r.type))).toEqual(new Set(['TIMESTAMP']));
  });
});
