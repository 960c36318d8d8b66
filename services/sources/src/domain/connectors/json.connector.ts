import type { BodyOf, ConnectorContext, UploadConnector } from './connector.ts';
import { ConnectorCheckError } from './connector.ts';
import { toNdjson } from './inline.connector.ts';
import { checkColumnCount, toRow, type Row } from './rows.ts';

/** Parses a JSON array of objects into flat rows; the error names the first bad element. */
export function rowsFromJson(text: string): Row[] {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new ConnectorCheckError('json', `the JSON could not be parsed: ${String((err as { message?: string }).message ?? 'invalid JSON').slice(0, 300)}`);
  }
  if (!Array.isArray(value)) throw new ConnectorCheckError('json', 'the JSON must be an array of objects');
  if (value.length === 0) throw new ConnectorCheckError('json', 'the JSON array is empty');
  const rows = value.map((v, i) => toRow(v, 'json', `element ${i}`));
  checkColumnCount(rows, 'json');
  return rows;
}

/** Parses NDJSON (one object per line; blank lines are skipped); the error names the first bad line. */
export function rowsFromNdjson(text: string): Row[] {
  const rows: Row[] = [];
  const lines = text.split(/\r?\n/);
  for (const [i, line] of lines.entries()) {
    if (!line.trim()) continue;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (err) {
      throw new ConnectorCheckError('ndjson', `line ${i + 1} is not valid JSON: ${String((err as { message?: string }).message ?? 'invalid JSON').slice(0, 300)}`);
    }
    rows.push(toRow(value, 'ndjson', `line ${i + 1}`));
  }
  if (rows.length === 0) throw new ConnectorCheckError('ndjson', 'the NDJSON has no rows');
  checkColumnCount(rows, 'ndjson');
  return rows;
}

/** check() parses once and stage() reuses the rows for the same request body. */
function cachedRows<B extends object>(parse: (b: B) => Row[]) {
  const cache = new WeakMap<B, Row[]>();
  return (body: B): Row[] => {
    let rows = cache.get(body);
    if (!rows) {
      rows = parse(body);
      cache.set(body, rows);
    }
    return rows;
  };
}

const jsonRows = cachedRows<BodyOf<'json'>>((b) => rowsFromJson(b.json));
const ndjsonRows = cachedRows<BodyOf<'ndjson'>>((b) => rowsFromNdjson(b.ndjson));

async function stageRows(rows: Row[], ctx: ConnectorContext) {
  await ctx.store.stage(ctx.accountId, ctx.sourceId, 'ndjson', toNdjson(rows));
  return 'ndjson' as const;
}

/** Uploaded JSON: parsed, flattened and staged as NDJSON, exactly like inline rows. */
export const jsonConnector: UploadConnector<'json'> = {
  type: 'json',
  mode: 'upload',
  async check(body) {
    jsonRows(body);
  },
  stage: (body, ctx) => stageRows(jsonRows(body), ctx),
};

export const ndjsonConnector: UploadConnector<'ndjson'> = {
  type: 'ndjson',
  mode: 'upload',
  async check(body) {
    ndjsonRows(body);
  },
  stage: (body, ctx) => stageRows(ndjsonRows(body), ctx),
};
