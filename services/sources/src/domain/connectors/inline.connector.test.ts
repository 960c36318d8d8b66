import { readFile } from 'node:fs/promises';
import { newId } from '@dap/contracts';
import { sqlLiteral } from '@dap/datasets';
import { ConnectorCheckError } from './connector.ts';
import { MAX_COLUMNS } from './rows.ts';
import { inlineConnector, normalizeTimestamps, parseIsoTimestamp, toNdjson } from './inline.connector.ts';
import { columns } from '@dap/testing';
import { useTempStore } from '../../../test/temp-store.ts';

describe('parseIsoTimestamp', () => {
  it('reads date-times without an offset as UTC', () => {
    expect(parseIsoTimestamp('2024-03-01 10:00:00')).toEqual({ ms: Date.UTC(2024, 2, 1, 10), hasTime: true });
    expect(parseIsoTimestamp('2024-03-01T10:00')).toEqual({ ms: Date.UTC(2024, 2, 1, 10), hasTime: true });
  });

  it('applies offsets and keeps milliseconds', () => {
    expect(parseIsoTimestamp('2024-03-01T10:00:00.5+02:00')?.ms).toBe(Date.UTC(2024, 2, 1, 8, 0, 0, 500));
  });

  it('reads dates and refuses impossible ones and other strings', () => {
    expect(parseIsoTimestamp('2024-02-29')).toEqual({ ms: Date.UTC(2024, 1, 29), hasTime: false });
    expect(parseIsoTimestamp('2023-02-29')).toBeNull();
    expect(parseIsoTimestamp('2024-13-01')).toBeNull();
    expect(parseIsoTimestamp('2024-01-01T25:00:00Z')).toBeNull();
    expect(parseIsoTimestamp('yesterday')).toBeNull();
    expect(parseIsoTimestamp('20240101')).toBeNull();
  });
});

describe('normalizeTimestamps', () => {
  it('rewrites a column of mixed ISO forms to one UTC form and leaves other columns alone', () => {
    const rows = [
      { at: '2024-01-01T10:00:00Z', note: '2024-01-01T10:00:00Z', day: '2024-01-01' },
      { at: '2024-01-02 11:30:00.25', note: 'not a time', day: '2024-01-02' },
      { at: null, note: null, day: null },
    ];
    expect(normalizeTimestamps(rows)).toEqual([
      { at: '2024-01-01T10:00:00.000Z', note: '2024-01-01T10:00:00Z', day: '2024-01-01' },
      { at: '2024-01-02T11:30:00.250Z', note: 'not a time', day: '2024-01-02' },
      { at: null, note: null, day: null },
    ]);
  });

  it('leaves a column with numbers untouched', () => {
    const rows = [{ t: '2024-01-01T00:00:00Z' }, { t: 5 }];
    expect(normalizeTimestamps(rows)).toEqual(rows);
  });
});

describe('toNdjson', () => {
  it('writes one JSON object per line', () => {
    expect(
      toNdjson([
        { a: 1, b: 'x' },
        { a: 2, c: true },
      ]),
    ).toBe('{"a":1,"b":"x"}\n{"a":2,"c":true}\n');
  });
});

describe('inlineConnector', () => {
  const temp = useTempStore('inline');

  it('refuses rows with too many distinct fields', async () => {
    const rows = Array.from({ length: 3 }, (_, r) => Object.fromEntries(Array.from({ length: 400 }, (_, i) => [`f${r}_${i}`, i] as const)));
    const ctx = { store: temp.store, accountId: newId('acct'), sourceId: newId('src') };
    await expect(inlineConnector.check({ type: 'inline', name: 'n', rows }, ctx)).rejects.toBeInstanceOf(ConnectorCheckError);
    expect(MAX_COLUMNS).toBeLessThan(1200);
  });

  it('stages NDJSON that ingests with integer, number, string, boolean and timestamp columns', async () => {
    const ctx = { store: temp.store, accountId: newId('acct'), sourceId: newId('src') };
    const rows = [
      { id: 1, price: 2.5, city: 'Oslo', paid: true, at: '2024-01-01T10:00:00Z' },
      { id: 2, price: 3, city: 'Rio', paid: false, at: '2024-01-02T11:00:00.5Z' },
      { id: 3, price: null, city: null, paid: null, at: '2024-01-03 12:00:00' },
    ];
    await inlineConnector.check({ type: 'inline', name: 'n', rows }, ctx);
    expect(await inlineConnector.stage({ type: 'inline', name: 'n', rows }, ctx)).toBe('ndjson');
    const staged = await readFile(temp.store.stagingFile(ctx.accountId, ctx.sourceId, 'ndjson'), 'utf8');
    expect(staged.trim().split('\n')).toHaveLength(3);
    const result = await temp.store.ingest(ctx.accountId, ctx.sourceId, 'ndjson');
    expect(result.rowCount).toBe(3);
    expect(result.schema).toEqual(columns({ id: 'integer', price: 'number', city: 'string', paid: 'boolean', at: 'timestamp' }));
    const sum = await temp.store.duck.run(`SELECT sum(price) AS s, strftime(max("at"), '%Y-%m-%dT%H:%M:%S.%g') AS last FROM read_parquet(${sqlLiteral(result.file)})`);
    expect(sum.rows[0]).toEqual({ s: 5.5, last: '2024-01-03T12:00:00.000' });
  });
});
