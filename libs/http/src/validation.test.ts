import { z } from 'zod';
import { AppError } from './errors.ts';
import { checkJsonShape, parseOr400, MAX_JSON_DEPTH } from './validation.ts';
import { decodeCursor, encodeCursor, toPage } from './pagination.ts';

describe('request validation', () => {
  it('throws a 400 with one entry per bad field', () => {
    const schema = z.strictObject({ name: z.string(), n: z.number() });
    try {
      parseOr400(schema, { name: 1, extra: true }, 'body');
      throw new Error('expected a failure');
    } catch (err) {
      expect(err).toBeInstanceOf(AppError);
      const e = err as AppError;
      expect(e.status).toBe(400);
      expect(e.errors?.map((x) => x.path).sort()).toEqual(['extra', 'n', 'name']);
      expect(e.errors?.find((x) => x.path === 'extra')?.message).toBe('unknown field');
    }
  });

  it('says what a union field wanted: every type of a scalar union, or the issues of the closest option', () => {
    const errorsOf = (schema: z.ZodType, value: unknown) => {
      try {
        parseOr400(schema, value, 'body');
      } catch (err) {
        return (err as AppError).errors;
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

  it('names why a key is refused', () => {
    const reason = (v: unknown) => {
      try {
        checkJsonShape(v);
      } catch (err) {
        return (err as AppError).errors?.[0];
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
    expect(() => checkJsonShape('\udfff')).toThrow(AppError);
    expect(() => checkJsonShape({ emoji: '\ud83d\udca9 ok', nul: 'a\u0000b' })).not.toThrow();
  });

  it('pages newest-first rows and round-trips the cursor', () => {
    const rows = [{ id: 'c' }, { id: 'b' }, { id: 'a' }];
    const page = toPage(rows, 2);
    expect(page).toEqual({ data: [{ id: 'c' }, { id: 'b' }], hasMore: true, nextCursor: encodeCursor('b') });
    expect(decodeCursor(page.nextCursor!, (id) => id === 'b')).toBe('b');
    expect(() => decodeCursor('garbage', () => false)).toThrow(AppError);
    expect(toPage(rows, 3)).toEqual({ data: rows, hasMore: false, nextCursor: null });
  });
});
