import { DomainError } from '@dap/errors';
import { CURSOR_MESSAGE } from './api/common.ts';

export interface Page<T> {
  data: T[];
  hasMore: boolean;
  nextCursor: string | null;
}

/** Cursors are opaque: the base64url of the last id seen (ids sort by creation time). */
export function encodeCursor(lastId: string): string {
  return Buffer.from(lastId, 'utf8').toString('base64url');
}

export function decodeCursor(cursor: string | undefined, isValidId: (id: string) => boolean): string | undefined {
  if (cursor === undefined) return undefined;
  const id = Buffer.from(cursor, 'base64url').toString('utf8');
  if (!isValidId(id)) throw new DomainError('validation_failed', `the query is invalid: cursor: ${CURSOR_MESSAGE}`, { errors: [{ path: 'cursor', message: CURSOR_MESSAGE }] });
  return id;
}

/** Takes `limit + 1` rows fetched newest first and shapes one page. */
export function toPage<T extends { id: string }>(rows: T[], limit: number): Page<T> {
  const hasMore = rows.length > limit;
  const data = hasMore ? rows.slice(0, limit) : rows;
  return { data, hasMore, nextCursor: hasMore && data.length ? encodeCursor(data[data.length - 1]!.id) : null };
}
