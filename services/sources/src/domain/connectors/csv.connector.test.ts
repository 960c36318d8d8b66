import { readFile } from 'node:fs/promises';
import { newId } from '@dap/contracts';
import { ConnectorCheckError } from './connector.ts';
import { checkCsv, csvConnector, scanCsv } from './csv.connector.ts';
import { useTempStore } from '../../../test/temp-store.ts';

const temp = useTempStore('csv');

async function refusal(csv: string): Promise<ConnectorCheckError> {
  try {
    await checkCsv(csv, { store: temp.store });
  } catch (err) {
    if (err instanceof ConnectorCheckError) return err;
    throw err;
  }
  throw new Error('the CSV was accepted');
}

describe('scanCsv', () => {
  it('finds the end of the header, ignoring line breaks inside quotes', () => {
    const text = '"a\nb",c\n1,2\n';
    expect(scanCsv(text)).toEqual({ headerEnd: 8, probeEnd: text.length });
  });

  it('reports a single record as having no header end', () => {
    expect(scanCsv('a,b').headerEnd).toBe(-1);
  });

  it('cuts the probe at the last whole record within the limit', () => {
    const text = 'a,b\n1,2\n3,"x\ny"\n5,6\n';
    // limit 14 ends inside the quoted field of the third record: the probe stops after "1,2\n"
    expect(scanCsv(text, 14)).toEqual({ headerEnd: 4, probeEnd: 8 });
    expect(scanCsv(text, 17)).toEqual({ headerEnd: 4, probeEnd: 16 });
  });
});

describe('checkCsv', () => {
  it('accepts a well-formed CSV', async () => {
    await expect(checkCsv('id,amount,city\n1,9.5,Oslo\n2,3,"Rio, BR"\n', { store: temp.store })).resolves.toBeUndefined();
  });

  it('accepts semicolon-delimited and CRLF files', async () => {
    await expect(checkCsv('a;b\r\n1;2\r\n', { store: temp.store })).resolves.toBeUndefined();
  });

  it('refuses an empty or blank CSV', async () => {
    expect((await refusal('   \n\n')).message).toBe('the CSV is empty');
  });

  it('refuses a header-only CSV, with or without a final line break', async () => {
    expect((await refusal('a,b,c\n')).message).toBe('the CSV has a header row but no data rows');
    expect((await refusal('a,b,c')).message).toBe('the CSV has a header row but no data rows');
    expect((await refusal('a,b\n\n  \n')).field).toBe('csv');
  });

  it('refuses binary content', async () => {
    expect((await refusal('a,b\n\u0000\u0001,2\n')).message).toMatch(/NUL characters/);
  });

  it('refuses a CSV whose rows have inconsistent column counts, without leaking file paths', async () => {
    let big = 'a,b\n';
    for (let i = 0; i < 3000; i++) big += `${i},${i * 2}\n`;
    const err = await refusal(`${big}1,2,3\n`);
    expect(err.message).toMatch(/^the CSV could not be parsed: /);
    expect(err.message).not.toMatch(/\/tmp|dap-csv-probe|probe\.csv/);
    const small = await refusal('a,b\n1,2\n1,2,3\n4,5\n');
    expect(small.message).toMatch(/consistent number of columns/);
  });

  it('refuses a CSV that DuckDB could only read by skipping the rows before a ragged one', async () => {
    let rows = 'a,b\n';
    for (let i = 0; i < 2000; i++) rows += `${i},${i}\n`;
    const err = await refusal(`${rows}1,2,3\n`);
    expect(err.message).toMatch(/consistent number of columns \(row \d+ differs from the header\)/);
  });

  it('refuses a quoted value that is never closed, naming its line, and accepts a quote inside an unquoted value', async () => {
    expect((await refusal('a,b\n1,"x"\n2,"never closed\n3,4\n')).message).toBe('the CSV could not be parsed: line 3: a quoted value is never closed');
    await expect(checkCsv('a,b\n1,12" pizza\n2,ok\n', { store: temp.store })).resolves.toBeUndefined();
  });

  it('accepts a single-column CSV', async () => {
    await expect(checkCsv('name\nada\ngrace\n', { store: temp.store })).resolves.toBeUndefined();
  });
});

describe('csvConnector.stage', () => {
  it('writes the CSV text unchanged to the staging file', async () => {
    const accountId = newId('acct');
    const sourceId = newId('src');
    const csv = 'a,b\n1,"x\ny"\n';
    expect(await csvConnector.stage({ type: 'csv', name: 'n', csv }, { store: temp.store, accountId, sourceId })).toBe('csv');
    expect(await readFile(temp.store.stagingFile(accountId, sourceId, 'csv'), 'utf8')).toBe(csv);
    const result = await temp.store.ingest(accountId, sourceId, 'csv');
    expect(result.rowCount).toBe(1);
    expect(result.schema).toEqual([
      { name: 'a', type: 'integer' },
      { name: 'b', type: 'string' },
    ]);
  });
});
