import { DomainError } from '@dap/errors';
import { decodeCursor, encodeCursor, toPage } from './pagination.ts';

it('pages newest-first rows and round-trips the cursor', () => {
  const rows = [{ id: 'c' }, { id: 'b' }, { id: 'a' }];
  const page = toPage(rows, 2);
  expect(page).toEqual({ data: [{ id: 'c' }, { id: 'b' }], hasMore: true, nextCursor: encodeCursor('b') });
  expect(decodeCursor(page.nextCursor!, (id) => id === 'b')).toBe('b');
  expect(toPage(rows, 3)).toEqual({ data: rows, hasMore: false, nextCursor: null });
});

it('refuses a cursor it did not give as a validation failure naming the cursor', () => {
  let thrown: unknown;
  try {
    decodeCursor('garbage', () => false);
  } catch (err) {
    thrown = err;
  }
  expect(thrown).toBeInstanceOf(DomainError);
  expect(thrown).toMatchObject({ code: 'validation_failed', errors: [{ path: 'cursor' }] });
});
