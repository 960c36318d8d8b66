import type { StagedColumn, StagedColumnType } from '../connectors/connector.ts';

/** A JSON number as text (what JSON.parse accepts), so big integers and exact decimals pass through untouched. */
const JSON_NUMBER = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/;
const ISO_DATE_START = /^\d{4}-\d{2}-\d{2}/;

function numberText(v: unknown): string {
  if (typeof v === 'number') return Number.isFinite(v) ? String(v) : 'null';
  if (typeof v === 'bigint') return v.toString();
  if (Buffer.isBuffer(v)) return v.length ? BigInt(`0x${v.toString('hex')}`).toString() : 'null'; // MySQL BIT
  const s = typeof v === 'string' ? v.trim() : String(v);
  if (JSON_NUMBER.test(s)) return s;
  const n = Number(s);
  return s !== '' && Number.isFinite(n) ? String(n) : 'null'; // NaN, Infinity: JSON has no such number
}

function boolText(v: unknown): string {
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  // MySQL's BOOLEAN (TINYINT(1)) holds any small integer, and any but 0 is true there.
  if (typeof v === 'number') return Number.isNaN(v) ? 'null' : v !== 0 ? 'true' : 'false';
  const s = String(v).toLowerCase();
  if (s === 't' || s === 'true' || s === '1' || s === 'yes' || s === 'on') return 'true';
  if (s === 'f' || s === 'false' || s === '0' || s === 'no' || s === 'off') return 'false';
  return 'null';
}

/** Dates and timestamps arrive as text in UTC (the sessions are set to UTC); infinity, BC and zero dates become null. */
function timeText(v: unknown): string {
  if (v instanceof Date) return Number.isNaN(v.getTime()) ? 'null' : JSON.stringify(v.toISOString());
  const s = String(v);
  if (!ISO_DATE_START.test(s) || s.startsWith('0000-') || / BC$/.test(s)) return 'null';
  return JSON.stringify(s);
}

function stringText(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v);
  if (Buffer.isBuffer(v)) return JSON.stringify(v.toString('base64'));
  if (v instanceof Date) return JSON.stringify(v.toISOString());
  if (typeof v === 'object') return JSON.stringify(JSON.stringify(v));
  return JSON.stringify(String(v));
}

const ENCODERS: Record<StagedColumnType, (v: unknown) => string> = {
  BIGINT: numberText,
  DOUBLE: numberText,
  BOOLEAN: boolText,
  DATE: timeText,
  TIMESTAMP: timeText,
  VARCHAR: stringText,
};

/**
 * Gives duplicate column names (a join selecting `a.id, b.id`) a numeric suffix, so none is lost. DuckDB
 * names are case-insensitive, so `id` and `ID` count as duplicates too.
 */
export function uniqueNames(names: readonly string[]): string[] {
  const seen = new Set<string>();
  return names.map((n) => {
    const base = n || 'column';
    let name = base;
    for (let i = 2; seen.has(name.toLowerCase()); i++) name = `${base}_${i}`;
    seen.add(name.toLowerCase());
    return name;
  });
}

/** Builds a fast encoder from a row of values (in column order) to one NDJSON line. */
export function ndjsonEncoder(columns: readonly StagedColumn[]): (values: readonly unknown[]) => string {
  const keys = columns.map((c, i) => `${i === 0 ? '{' : ','}${JSON.stringify(c.name)}:`);
  const enc = columns.map((c) => ENCODERS[c.type]);
  const n = columns.length;
  return (values) => {
    let line = '';
    for (let i = 0; i < n; i++) {
      const v = values[i];
      line += keys[i]! + (v === null || v === undefined ? 'null' : enc[i]!(v));
    }
    return n ? `${line}}\n` : '{}\n';
  };
}
