import { newId } from '@dap/contracts';
import { ConnectorCheckError } from './connector.ts';
import { jsonConnector, ndjsonConnector, rowsFromJson, rowsFromNdjson } from './json.connector.ts';
import { columns } from '@dap/testing';
import { useTempStore } from '../../../test/temp-store.ts';

function reason(fn: () => unknown): { field: string; message: string } {
  try {
    fn();
  } catch (err) {
    if (err instanceof ConnectorCheckError) return { field: err.field, message: err.message };
    throw err;
  }
  throw new Error('accepted');
}

describe('rowsFromJson', () => {
  it('reads an array of objects, keeping nested values as JSON text', () => {
    expect(rowsFromJson('[{"a":1,"b":{"c":[1,2]}},{"a":null,"d":"x"}]')).toEqual([
      { a: 1, b: '{"c":[1,2]}' },
      { a: null, d: 'x' },
    ]);
  });

  it('refuses invalid JSON, a non-array, an empty array and non-object elements', () => {
    expect(reason(() => rowsFromJson('[{"a":1}'))).toMatchObject({ field: 'json', message: expect.stringMatching(/^the JSON could not be parsed: /) });
    expect(reason(() => rowsFromJson('{"a":1}')).message).toBe('the JSON must be an array of objects');
    expect(reason(() => rowsFromJson('[]')).message).toBe('the JSON array is empty');
    expect(reason(() => rowsFromJson('[{"a":1}, 5]')).message).toBe('element 1 is not a JSON object');
    expect(reason(() => rowsFromJson('[{}]')).message).toMatch(/element 0 must have 1 to 500 fields/);
  });

  it('refuses $-keys and prototype keys', () => {
    expect(reason(() => rowsFromJson('[{"$where":"1"}]')).message).toMatch(/element 0: field name "\$where" is not allowed/);
    expect(reason(() => rowsFromJson('[{"__proto__":1}]')).message).toMatch(/not allowed/);
  });
});

describe('rowsFromNdjson', () => {
  it('reads one object per line, skipping blank lines and CRLF', () => {
    expect(rowsFromNdjson('{"a":1}\r\n\n{"a":2}\n')).toEqual([{ a: 1 }, { a: 2 }]);
  });

  it('names the first bad line', () => {
    expect(reason(() => rowsFromNdjson('{"a":1}\n{"a":\n'))).toMatchObject({ field: 'ndjson', message: expect.stringMatching(/^line 2 is not valid JSON/) });
    expect(reason(() => rowsFromNdjson('{"a":1}\n[1]\n')).message).toBe('line 2 is not a JSON object');
    expect(reason(() => rowsFromNdjson(' \n\n')).message).toBe('the NDJSON has no rows');
  });
});

describe('json and ndjson connectors', () => {
  const temp = useTempStore('json');

  it('stage uploads that ingest with the same types as inline rows', async () => {
    const text = '{"n":1,"x":1.5,"s":"a","b":true,"t":"2024-01-01T00:00:00Z"}\n{"n":2,"x":2,"s":"b","b":false,"t":"2024-01-02T00:00:00.5Z"}\n';
    const expected = columns({ n: 'integer', x: 'number', s: 'string', b: 'boolean', t: 'timestamp' });
    const nd = { store: temp.store, accountId: newId('acct'), sourceId: newId('src') };
    const ndBody = { type: 'ndjson' as const, name: 'n', ndjson: text };
    await ndjsonConnector.check(ndBody, nd);
    expect(await ndjsonConnector.stage(ndBody, nd)).toBe('ndjson');
    expect(await temp.store.ingest(nd.accountId, nd.sourceId, 'ndjson')).toMatchObject({ rowCount: 2, schema: expected });

    const js = { store: temp.store, accountId: newId('acct'), sourceId: newId('src') };
    const jsBody = { type: 'json' as const, name: 'j', json: `[${text.trim().split('\n').join(',')}]` };
    await jsonConnector.check(jsBody, js);
    expect(await jsonConnector.stage(jsBody, js)).toBe('ndjson');
    expect(await temp.store.ingest(js.accountId, js.sourceId, 'ndjson')).toMatchObject({ rowCount: 2, schema: expected });
  });
});
