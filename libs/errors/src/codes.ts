import catalogue from './codes.json' with { type: 'json' };
import { ERROR_KINDS, type ErrorKind } from './kinds.ts';

interface CodeEntry {
  kind: ErrorKind;
  /** One line for the API reference and the problem pages: when a response carries this code. */
  meaning: string;
}

/**
 * Every error code a response can carry, with its kind and meaning, lives in `codes.json`: a table of prose
 * for the API reference, kept as data. Its groups are the services that raise each code: `platform` (the
 * shared HTTP layer and the gateway, for any operation: a malformed body, missing credentials, a rate limit,
 * an outage, and `validation_failed` for any field that fails its schema), `accounts`, `sources` (with the
 * analytics and models operations that name a source), `analytics`, `models` and `webhooks`.
 */
type Catalogue = typeof catalogue;
type Group = keyof Catalogue;
export type ErrorCode = { [G in Group]: keyof Catalogue[G] }[Group];

/** Reads the catalogue, once when it loads: every code must name one of the kinds, in one group only. */
export function readCodeCatalogue(catalogue: Record<string, Record<string, { kind: string; meaning: string }>>): {
  codes: Readonly<Record<ErrorCode, CodeEntry>>;
  groups: Readonly<Record<string, readonly ErrorCode[]>>;
} {
  const codes: Record<string, CodeEntry> = {};
  const groups: Record<string, ErrorCode[]> = {};
  for (const [group, entries] of Object.entries(catalogue)) {
    groups[group] = [];
    for (const [code, { kind, meaning }] of Object.entries(entries)) {
      if (!(ERROR_KINDS as readonly string[]).includes(kind)) throw new Error(`codes.json: ${code} has the unknown kind ${kind}`);
      if (Object.hasOwn(codes, code)) throw new Error(`codes.json: ${code} stands in two groups`);
      codes[code] = Object.freeze({ kind: kind as ErrorKind, meaning });
      groups[group].push(code as ErrorCode);
    }
  }
  return { codes: Object.freeze(codes) as Record<ErrorCode, CodeEntry>, groups: Object.freeze(groups) };
}

const loaded = readCodeCatalogue(catalogue);

/**
 * Every error code a response can carry, with its kind. One shared catalogue, grouped by the service that
 * raises each code: a code keeps its meaning wherever it appears (`source_not_found` from sources, analytics
 * or models), and the OpenAPI document lists it once. See the README of this library.
 */
export const ERROR_CODES: Readonly<Record<ErrorCode, CodeEntry>> = loaded.codes;

/** The codes grouped as the catalogue groups them, for documentation. */
export const ERROR_CODE_GROUPS: Readonly<Record<string, readonly ErrorCode[]>> = loaded.groups;

export const isErrorCode = (value: string): value is ErrorCode => Object.hasOwn(ERROR_CODES, value);
