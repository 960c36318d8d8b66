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
      expect(e.errors?.map((x) => x.path).sort()).toEqual(['(root)', 'n', 'name']);
    }
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
