import type { BodyOf, UploadConnector } from './connector.ts';
import { ConnectorCheckError } from './connector.ts';
import { toNdjson } from './inline.connector.ts';
import { checkColumnCount, toRow, type Row } from './rows.ts';

/** Parses one JSON text; a failure is a check error on `field`, saying `what` failed and what the parser said. */
function parseJson(text: string, field: string, what: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new ConnectorCheckError(field, `${what}: ${String((err as { message?: string }).message ?? 'invalid JSON').slice(0, 300)}`);
  }
}

/** Parses a JSON array of objects into flat rows; the error names the first bad element. */
export function rowsFromJson(text: string): Row[] {
  const value = parseJson(text, 'json', 'the JSON could not be parsed');
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
    rows.push(toRow(parseJson(line, 'ndjson', `line ${i + 1} is not valid JSON`), 'ndjson', `line ${i + 1}`));
  }
  if (rows.length === 0) throw new ConnectorCheckError('ndjson', 'the NDJSON has no rows');
  checkColumnCount(rows, 'ndjson');
  return rows;
}

/**
 * Uploaded rows in a text format: parsed, flattened and staged as NDJSON, exactly like inline rows. check()
 * parses once and stage() reuses the rows for the same request body.
 */
function uploadedRows<T extends 'json' | 'ndjson'>(type: T, parse: (body: BodyOf<T>) => Row[]): UploadConnector<T> {
  const parsed = new WeakMap<BodyOf<T>, Row[]>();
  const rowsOf = (body: BodyOf<T>): Row[] => {
    let rows = parsed.get(body);
    if (!rows) {
      rows = parse(body);
      parsed.set(body, rows);
    }
    return rows;
  };
  return {
    type,
    mode: 'upload',
    async check(body) {
      rowsOf(body);
    },
    async stage(body, ctx) {
      await ctx.store.stage(ctx.accountId, ctx.sourceId, 'ndjson', toNdjson(rowsOf(body)));
      return 'ndjson';
    },
  };
}

export const jsonConnector = uploadedRows('json', (b) => rowsFromJson(b.json));
export const ndjsonConnector = uploadedRows('ndjson', (b) => rowsFromNdjson(b.ndjson));
