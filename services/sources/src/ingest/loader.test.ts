import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { newId } from '@dap/contracts';
import { DatasetStore, sqlLiteral } from '@dap/datasets';
import { createLogger } from '@dap/logger';
import { CSV_SAMPLE_ROWS, DatasetLoader, LoadError, type LoadRequest } from './loader.ts';

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
    expect(types).toEqual({ plain: 'timestamp', iso_z: 'timestamp', offset: 'timestamp', slash: 'timestamp', us: 'timestamp', eu: 'timestamp', dots: 'timestamp', mixed_iso: 'timestamp' });
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

  it('keeps the file order, on all threads (small file) and on one (big file)', async () => {
    const threads = async () => Number((await store.duck.run(`SELECT current_setting('threads') AS t`)).rows[0]!.t);
    const allThreads = await threads();
    let csv = 'n\n';
    for (let i = 0; i < 200_000; i++) csv += `${i}\n`;
    const { rows } = await load('csv', csv);
    expect(rows.every((r, i) => r.n === i)).toBe(true);
    const oneThread = new DatasetLoader(store, { parallelMaxBytes: 0, logger: createLogger({ name: 'test', level: 'silent' }) });
    const accountId = newId('acct');
    const sourceId = newId('src');
    await store.stage(accountId, sourceId, 'csv', csv);
    const result = await oneThread.load({ accountId, sourceId, format: 'csv' });
    expect(result.rowCount).toBe(200_000);
    const big = (await store.duck.run(`SELECT n FROM read_parquet(${sqlLiteral(result.file)})`)).rows;
    expect(big.every((r, i) => r.n === i)).toBe(true);
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
