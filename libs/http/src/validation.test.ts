import { z } from 'zod';
import { createSourceBody } from '@dap/contracts';
import { DomainError } from '@dap/errors';
import { checkJsonShape, parseOr400, FULL_CHECK_MAX_NODES, MAX_JSON_DEPTH, MAX_LISTED_ERRORS } from './validation.ts';
import { problemOf, statusOf } from './errors.ts';

function failureOf(schema: z.ZodType, value: unknown): DomainError {
  try {
    parseOr400(schema, value, 'body');
  } catch (err) {
    return err as DomainError;
  }
  throw new Error('expected a failure');
}

describe('request validation', () => {
  it('throws a 400 with one entry per bad field', () => {
    const schema = z.strictObject({ name: z.string(), n: z.number() });
    try {
      parseOr400(schema, { name: 1, extra: true }, 'body');
      throw new Error('expected a failure');
    } catch (err) {
      expect(err).toBeInstanceOf(DomainError);
      const e = err as DomainError;
      expect([e.code, statusOf(e.code)]).toEqual(['validation_failed', 400]);
      expect(e.errors?.map((x) => x.path).sort()).toEqual(['extra', 'n', 'name']);
      expect(e.errors?.find((x) => x.path === 'extra')?.message).toBe('unknown field');
    }
  });

  it('says what a union field wanted: every type of a scalar union, or the issues of the closest option', () => {
    const errorsOf = (schema: z.ZodType, value: unknown) => {
      try {
        parseOr400(schema, value, 'body');
      } catch (err) {
        return (err as DomainError).errors;
      }
      throw new Error('expected a failure');
    };
    const scalar = z.record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.null()]));
    expect(errorsOf(scalar, { a: { b: 1 } })).toEqual([{ path: 'a', message: 'Invalid input: expected string, number, boolean or null, received object' }]);
    const leaf = z.strictObject({ field: z.string(), op: z.enum(['eq', 'gt']) });
    type Node = z.infer<typeof leaf> | { and: Node[] };
    const node: z.ZodType<Node> = z.lazy(() => z.union([leaf, z.strictObject({ and: z.array(node) })]));
    expect(errorsOf(z.array(node), [{ field: 'x', op: 'like' }])).toEqual([{ path: '0.op', message: 'Invalid option: expected one of "eq"|"gt"' }]);
    expect(
      errorsOf(z.array(node), [
        {
          and: [
            { field: 'x', op: 'gt' },
            { field: 1, op: 'eq' },
          ],
        },
      ]),
    ).toEqual([{ path: '0.and.1.field', message: 'Invalid input: expected string, received number' }]);
  });

  it('lists at most 100 field errors with their count, and a short detail', () => {
    const bad = Array.from({ length: 150 }, () => 'x');
    const e = failureOf(z.array(z.number()), bad);
    expect(e.errors).toHaveLength(MAX_LISTED_ERRORS);
    expect(e.errors?.[99]).toEqual({ path: '99', message: 'Invalid input: expected number, received string' });
    expect(problemOf(e, '/v1/x', 'req_1').errorCount).toBe(150);
    expect(e.message).toBe(
      'the body is invalid: 0: Invalid input: expected number, received string; 1: Invalid input: expected number, received string; 2: Invalid input: expected number, received string; 3: Invalid input: expected number, received string; 4: Invalid input: expected number, received string; and 145 more in errors[]',
    );
    // Positive control: a few errors are listed whole, without a count.
    const few = failureOf(z.array(z.number()), ['a', 'b']);
    expect(few.errors).toHaveLength(2);
    expect(problemOf(few, '/v1/x', 'req_1')).not.toHaveProperty('errorCount');
  });

  it('answers 10,000 inline rows of 10 bad fields with a small body, and stops checking at the first bad row', () => {
    const row = Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`f${i}`, []]));
    const body = { type: 'inline', name: 'x', rows: Array.from({ length: 10_000 }, () => ({ ...row })) };
    const e = failureOf(createSourceBody, body);
    expect([e.code, statusOf(e.code)]).toEqual(['validation_failed', 400]);
    expect(e.errors).toHaveLength(10);
    expect(e.errors?.[0]).toEqual({ path: 'rows.0.f0', message: 'Invalid input: expected string, number, boolean or null, received array' });
    expect(e.message).toMatch(/there may be more\)$/);
    expect(JSON.stringify(problemOf(e, '/v1/sources', 'req_1')).length).toBeLessThan(4_000);

    // Every item a schema checks is counted: past the size limit, checking stops at the first bad item.
    let checked = 0;
    const counting = z.array(z.custom<number>(() => (checked++, false)));
    failureOf(
      counting,
      Array.from({ length: FULL_CHECK_MAX_NODES + 1 }, () => 1),
    );
    expect(checked).toBeLessThan(5);
    // Positive control: below it, every item is checked and reported.
    checked = 0;
    const small = failureOf(
      counting,
      Array.from({ length: 500 }, () => 1),
    );
    expect(checked).toBeGreaterThanOrEqual(500);
    expect(small.errorCount).toBe(500);
  });

  it('parses a valid large body once and whole', () => {
    const rows = Array.from({ length: 10_000 }, (_, i) => ({ id: i, name: `n${i}` }));
    expect(parseOr400(createSourceBody, { type: 'inline', name: 'x', rows }, 'body')).toEqual({ type: 'inline', name: 'x', rows });
  });

  it('names why a key is refused', () => {
    const reason = (v: unknown) => {
      try {
        checkJsonShape(v);
      } catch (err) {
        return (err as DomainError).errors?.[0];
      }
      return null;
    };
    expect(reason({ rows: [{ $gt: 1 }] })).toEqual({ path: 'rows.0.$gt', message: 'field names may not start with $' });
    expect(reason(JSON.parse('{"rows":[{"__proto__":1}]}'))).toEqual({ path: 'rows.0.__proto__', message: 'the field name __proto__ is not allowed' });
  });

  it('refuses $-operator keys anywhere and nesting deeper than the limit', () => {
    expect(() => checkJsonShape({ a: [{ b: { $gt: 1 } }] })).toThrow(/not allowed/);
    let deep: unknown = 1;
    for (let i = 0; i < MAX_JSON_DEPTH + 1; i++) deep = { d: deep };
    expect(() => checkJsonShape(deep)).toThrow(/deeper/);
    let ok: unknown = 1;
    for (let i = 0; i < MAX_JSON_DEPTH - 1; i++) ok = [ok];
    expect(() => checkJsonShape(ok)).not.toThrow();
  });

  it('refuses strings and keys with a lone surrogate, and keeps paired ones', () => {
    expect(() => checkJsonShape({ a: ['ok', 'x\ud800y'] })).toThrow(/not valid Unicode/);
    expect(() => checkJsonShape({ ['\udc00k']: 1 })).toThrow(/not allowed/);
    expect(() => checkJsonShape('\udfff')).toThrow(DomainError);
    expect(() => checkJsonShape({ emoji: '\ud83d\udca9 ok', nul: 'a\u0000b' })).not.toThrow();
  });
});
