import { BSON } from 'mongodb';
import { ConnectorCheckError } from './connector.ts';
import { parseMongoFilter } from './mongo-filter.ts';

function refusal(text: string): string {
  try {
    parseMongoFilter(text);
  } catch (err) {
    expect(err).toBeInstanceOf(ConnectorCheckError);
    expect((err as ConnectorCheckError).field).toBe('filter');
    return (err as Error).message;
  }
  throw new Error(`accepted ${text}`);
}

describe('parseMongoFilter', () => {
  it('accepts equality and range documents, with Extended JSON values', () => {
    expect(parseMongoFilter(undefined)).toEqual({});
    expect(parseMongoFilter('  ')).toEqual({});
    expect(parseMongoFilter('{"kind": "click", "n": {"$gte": 1, "$lt": 10}}')).toEqual({ kind: 'click', n: { $gte: 1, $lt: 10 } });
    const f = parseMongoFilter('{"at": {"$gte": {"$date": "2024-01-01T00:00:00Z"}}, "_id": {"$ne": {"$oid": "65a1b2c3d4e5f60718293a4b"}}}');
    expect((f.at as { $gte: Date }).$gte).toEqual(new Date('2024-01-01T00:00:00Z'));
    expect((f._id as { $ne: BSON.ObjectId }).$ne).toBeInstanceOf(BSON.ObjectId);
    expect(parseMongoFilter('{"$or": [{"a": 1}, {"b": {"$in": [1, 2]}}], "c": {"$exists": true}, "d": {"$not": {"$gt": 5}}, "e.f": {"x": 1}}')).toBeDefined();
  });

  it.each(['$where', '$function', '$expr', '$accumulator'])('refuses %s, which runs code or expressions', (op) => {
    const body = op === '$where' ? `{"$where": "sleep(1000) || true"}` : `{"a": {"${op}": {"body": "function() { return true }", "args": [], "lang": "js"}}}`;
    expect(refusal(body)).toMatch(new RegExp(`\\${op} is not allowed: a filter may not run code`));
    expect(refusal(`{"$and": [{"x": 1}, ${body}]}`)).toMatch(/not allowed/);
  });

  it('refuses other operators, regular expressions, code values and malformed operator arguments', () => {
    expect(refusal('{"name": {"$regex": "^a"}}')).toMatch(/regular expressions/);
    expect(refusal('{"name": {"$size": 2}}')).toMatch(/\$size is not allowed; a filter may use only \$eq/);
    expect(refusal('{"name": {"$regularExpression": {"pattern": "a", "options": ""}}}')).toMatch(/BSONRegExp/);
    expect(refusal('{"name": {"$code": "function() {}"}}')).toMatch(/Code/);
    expect(refusal('{"$text": {"$search": "x"}}')).toMatch(/\$text is not allowed/);
    expect(refusal('{"$or": {"a": 1}}')).toMatch(/\$or takes a non-empty array/);
    expect(refusal('{"a": {"$in": 5}}')).toMatch(/\$in takes an array/);
    expect(refusal('{"a": {"$exists": "yes"}}')).toMatch(/\$exists takes true or false/);
  });

  it('refuses what is not a JSON object, and deep or huge documents', () => {
    expect(refusal('[{"a": 1}]')).toMatch(/must be a JSON object/);
    expect(refusal('{"a": ')).toMatch(/not valid JSON/);
    expect(refusal(`${'{"a":'.repeat(30)}1${'}'.repeat(30)}`)).toMatch(/nests deeper/);
    expect(refusal(`{"a": {"$in": [${Array.from({ length: 3000 }, (_, i) => i).join(',')}]}}`)).toMatch(/more than 2000 parts/);
  });
});
