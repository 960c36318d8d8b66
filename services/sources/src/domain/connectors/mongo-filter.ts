import { BSON, type Document } from 'mongodb';

const { EJSON } = BSON;
import { MONGO_FILTER_OPERATORS } from '@dap/contracts';
import { ConnectorCheckError } from './connector.ts';

const ALLOWED = new Set<string>(MONGO_FILTER_OPERATORS);
/** Operators that run code or expressions on the server; named in the refusal so the reason is plain. */
const CODE_OPERATORS = new Set(['$where', '$function', '$expr', '$accumulator', '$jsonSchema']);
const MAX_DEPTH = 20;
const MAX_NODES = 2_000;
/** BSON values a filter may compare against (Extended JSON turns {"$date": …} and friends into these). */
const VALUE_TYPES = new Set(['ObjectId', 'Long', 'Int32', 'Double', 'Decimal128', 'Binary', 'UUID', 'Timestamp']);

function refuse(message: string): never {
  throw new ConnectorCheckError('filter', message);
}

function operatorRefusal(op: string): never {
  if (CODE_OPERATORS.has(op))
    refuse(`the operator ${op} is not allowed: a filter may not run code or expressions; use equality and range operators (${MONGO_FILTER_OPERATORS.join(' ')})`);
  refuse(`the operator ${op.slice(0, 40)} is not allowed; a filter may use only ${MONGO_FILTER_OPERATORS.join(' ')}`);
}

/**
 * Parses a source's MongoDB filter: Extended JSON text of a plain query document whose operators are all
 * equality or range comparisons. Anything that evaluates code on the server ($where, $function, $expr,
 * $accumulator), regular expressions and JavaScript values are refused.
 */
export function parseMongoFilter(text: string | undefined): Document {
  if (text === undefined || !text.trim()) return {};
  let value: unknown;
  try {
    value = EJSON.parse(text, { relaxed: true });
  } catch (err) {
    refuse(`the filter is not valid JSON: ${String((err as { message?: string }).message ?? 'invalid JSON').slice(0, 200)}`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) refuse('the filter must be a JSON object (a query document)');
  let nodes = 0;
  const walk = (v: unknown, depth: number, where: string): void => {
    if (++nodes > MAX_NODES) refuse(`the filter has more than ${MAX_NODES} parts`);
    if (depth > MAX_DEPTH) refuse(`the filter nests deeper than ${MAX_DEPTH} levels`);
    if (v === null || typeof v !== 'object') return;
    if (v instanceof Date) return;
    if (Array.isArray(v)) return v.forEach((item, i) => walk(item, depth + 1, `${where}.${i}`));
    const bsontype = (v as { _bsontype?: unknown })._bsontype;
    if (typeof bsontype === 'string') {
      if (VALUE_TYPES.has(bsontype)) return;
      refuse(`${where || 'the filter'}: values of type ${bsontype} are not allowed (no code, regular expressions or references)`);
    }
    if (v instanceof RegExp) refuse(`${where || 'the filter'}: regular expressions are not allowed`);
    if (Object.getPrototypeOf(v) !== Object.prototype) refuse(`${where || 'the filter'}: unsupported value`);
    for (const [key, item] of Object.entries(v)) {
      if (key.startsWith('$')) {
        if (!ALLOWED.has(key)) operatorRefusal(key);
        if (
          (key === '$and' || key === '$or' || key === '$nor') &&
          (!Array.isArray(item) || !item.length || item.some((x) => x === null || typeof x !== 'object' || Array.isArray(x)))
        ) {
          refuse(`${key} takes a non-empty array of query documents`);
        }
        if ((key === '$in' || key === '$nin') && !Array.isArray(item)) refuse(`${key} takes an array`);
        if (key === '$exists' && typeof item !== 'boolean') refuse('$exists takes true or false');
        if (key === '$not' && (item === null || typeof item !== 'object' || Array.isArray(item))) refuse('$not takes an operator document such as {"$gt": 5}');
      } else if (key === '' || key.includes('\u0000') || key === '__proto__') {
        refuse('the filter has an invalid field name');
      }
      walk(item, depth + 1, where ? `${where}.${key}` : key);
    }
  };
  walk(value, 1, '');
  return value as Document;
}
