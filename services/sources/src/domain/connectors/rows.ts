import { ConnectorCheckError } from './connector.ts';

export type Scalar = string | number | boolean | null;
export type Row = Record<string, Scalar>;

/** A source has at most this many distinct fields across its rows. */
export const MAX_COLUMNS = 1000;
export const MAX_FIELDS_PER_ROW = 500;

export function checkColumnCount(rows: readonly Row[], field: string): void {
  const columns = new Set<string>();
  for (const row of rows) for (const k of Object.keys(row)) columns.add(k);
  if (columns.size > MAX_COLUMNS) {
    throw new ConnectorCheckError(field, `the rows have ${columns.size} distinct fields; at most ${MAX_COLUMNS} are allowed`);
  }
}

const RESERVED = new Set(['__proto__', 'constructor', 'prototype']);

/** The same field-name rules as inline rows: no `$` operators, no prototype keys, no NUL, 1–128 characters. */
export function fieldNameProblem(key: string): string | null {
  if (key.length < 1 || key.length > 128) return 'field names have 1 to 128 characters';
  if (key.startsWith('$') || key.includes('\u0000') || RESERVED.has(key)) return `field name ${JSON.stringify(key.slice(0, 40))} is not allowed`;
  return null;
}

/**
 * Turns one parsed JSON value into a flat row. Nested objects and arrays are kept as their JSON text, so a
 * column is always a scalar type the analytics engine can filter and group on.
 */
export function toRow(value: unknown, field: string, where: string): Row {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new ConnectorCheckError(field, `${where} is not a JSON object`);
  }
  const entries = Object.entries(value);
  if (entries.length === 0 || entries.length > MAX_FIELDS_PER_ROW) {
    throw new ConnectorCheckError(field, `${where} must have 1 to ${MAX_FIELDS_PER_ROW} fields`);
  }
  const row: Row = {};
  for (const [k, v] of entries) {
    const problem = fieldNameProblem(k);
    if (problem) throw new ConnectorCheckError(field, `${where}: ${problem}`);
    row[k] = v === null || typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean' ? v : JSON.stringify(v);
  }
  return row;
}
