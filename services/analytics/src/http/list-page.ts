import type { Request } from 'express';
import { decodeCursor, isId, listQuerySchema, toPage, type IdPrefix, type Page } from '@dap/contracts';
import { callerOf, parseOr400 } from '@dap/http';

/** What a list reads: the caller's documents newest first, up to `limit`, below the id `before`. */
export type ListOf<R> = (accountId: string, opts: { limit: number; before: string | undefined }) => Promise<R[]>;

/** A list route's answer: the query's limit and cursor (an id of `prefix`), one page of `list`, as DTOs. */
export async function listPage<R extends { _id: string }, D>(req: Request, prefix: IdPrefix, list: ListOf<R>, toDto: (row: R) => D): Promise<Page<D>> {
  const { accountId } = callerOf(req);
  const q = parseOr400(listQuerySchema, req.query, 'query');
  const before = decodeCursor(q.cursor, (id) => isId(prefix, id));
  const rows = await list(accountId, { limit: q.limit + 1, before });
  const page = toPage(
    rows.map((r) => ({ ...r, id: r._id })),
    q.limit,
  );
  return { ...page, data: page.data.map(toDto) };
}
