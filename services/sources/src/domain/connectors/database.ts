import type { RemoteSourceType } from '@dap/contracts';
import { StagingWriter } from '../ingest/staging-file.ts';
import {
  ConnectorCheckError,
  type BodyOf,
  type IncrementalRead,
  type PullContext,
  type PullResult,
  type RemoteConnector,
  type RemoteContext,
  type StagedColumn,
} from './connector.ts';
import { connectionOf, publicConnection, sqlSpecSchema, type SqlSpec } from './db-spec.ts';
import { withDeadline } from './deadline.ts';

/**
 * What a database connector knows about its engine. The skeleton (`databaseConnection`) gives every engine the
 * same deadlines, staging file, clean-up and error mapping, so each connector only says how to connect, probe
 * and read.
 */
export interface DatabaseDriver<S, C> {
  /** The engine's name in messages: "checking the PostgreSQL source", "reading from PostgreSQL". */
  label: string;
  connect(spec: S, ctx: RemoteContext, signal: AbortSignal): Promise<C>;
  /** Closes the connection, never throwing (db-spec's closeQuietly). */
  close(client: C): Promise<void>;
  /** The customer-facing error for whatever connecting, probing or reading threw. */
  failure(err: unknown, spec: S): Error;
  /** Proves the source can be read (the statement parses, the collection exists) while reading little or nothing. */
  probe(client: C, spec: S): Promise<void>;
  /**
   * Reads the rows into the staging file (NDJSON); the skeleton commits it, or aborts it on failure. With
   * `inc`, only the rows at or past its cursor value, in cursor order (see incrementalSql).
   */
  read(client: C, spec: S, writer: StagingWriter, inc: IncrementalRead | null): Promise<DriverRead>;
  /** The engine's error code for a statement naming a column it does not have (the incremental cursor). */
  missingColumnCode?: string;
}

/** What a driver's read found. */
export interface DriverRead {
  columns?: StagedColumn[];
  checkFieldNames?: boolean;
  rows: number;
  /**
   * An incremental read: the cursor value of the last row read (the highest), as the origin printed it; null
   * when it had none, undefined when that row lacks the field altogether (a document).
   */
  lastCursor?: string | null | undefined;
}

/**
 * The statement of an incremental SQL pull: the source's own statement as a subquery, only rows at or past the
 * last cursor value (`>=`, so rows sharing that value are read again rather than lost; the merge drops the
 * ones already stored), ordered by the cursor so the last row read carries the highest value. Rows without a
 * cursor value come first, so they never stand for the highest.
 */
export function incrementalSql(base: string, inc: IncrementalRead | null, dialect: { quote(s: string): string; literal(s: string): string; nullsFirst: string }): string {
  if (!inc) return base;
  const col = `dap_src.${dialect.quote(inc.cursorField)}`;
  const where = inc.since === null ? '' : ` WHERE ${col} >= ${dialect.literal(inc.since)}`;
  return `SELECT * FROM (${base}) AS dap_src${where} ORDER BY ${col} ASC${dialect.nullsFirst}`;
}

/** Whether the engine refused the statement for naming this column: its code says so, and its message quotes it (qualified by the subquery or not). */
function missingColumn(code: string | undefined, err: unknown, column: string): boolean {
  const e = err as { code?: unknown; message?: unknown } | null;
  return code !== undefined && e?.code === code && String(e.message ?? '').includes(column);
}

/** The text of the cursor value in one row read as an array (null stays null). */
export function cursorText(row: readonly unknown[] | undefined, index: number): string | null | undefined {
  if (!row || index < 0) return undefined;
  const v = row[index];
  return v === null || v === undefined ? null : String(v);
}

/** `check` and `pull` of a database connector, from its driver. */
export function databaseConnection<T extends RemoteSourceType, S, C>(driver: DatabaseDriver<S, C>): Pick<RemoteConnector<T, S>, 'check' | 'pull'> {
  return {
    async check(spec: S, ctx: RemoteContext): Promise<void> {
      await withDeadline(
        ctx.signal,
        ctx.limits.checkTimeoutMs,
        `checking the ${driver.label} source`,
        async (signal) => {
          let client: C | null = null;
          try {
            client = await driver.connect(spec, ctx, signal);
            await driver.probe(client, spec);
          } catch (err) {
            throw driver.failure(err, spec);
          } finally {
            if (client !== null) await driver.close(client);
          }
        },
        'connection',
      );
    },

    async pull(spec: S, ctx: PullContext): Promise<PullResult> {
      return withDeadline(
        ctx.signal,
        ctx.limits.dbTimeoutMs,
        `reading from ${driver.label}`,
        async (signal) => {
          let client: C | null = null;
          const writer = await StagingWriter.open(ctx.store, ctx.accountId, ctx.sourceId, 'ndjson', ctx.limits.maxBytes);
          try {
            client = await driver.connect(spec, ctx, signal);
            const inc = ctx.incremental ?? null;
            const { lastCursor, ...read } = await driver.read(client, spec, writer, inc);
            if (inc && read.rows > 0 && lastCursor === undefined) {
              throw new ConnectorCheckError('incremental.cursorField', `the ${driver.label} data has no field ${inc.cursorField} to sync incrementally by`);
            }
            await writer.commit();
            return { format: 'ndjson', ...read, ...(inc ? { cursor: lastCursor ?? null } : {}) };
          } catch (err) {
            await writer.abort();
            const inc = ctx.incremental;
            if (inc && missingColumn(driver.missingColumnCode, err, inc.cursorField)) {
              throw new ConnectorCheckError('incremental.cursorField', `the ${driver.label} data has no column ${inc.cursorField} to sync incrementally by`);
            }
            throw driver.failure(err, spec);
          } finally {
            if (client !== null) await driver.close(client);
          }
        },
        'connection',
      );
    },
  };
}

/** A SQL engine's connector (PostgreSQL, MySQL/MariaDB): a table or a read-only query, read through its driver. */
export function sqlConnector<T extends 'postgres' | 'mysql', C>(type: T, driver: DatabaseDriver<SqlSpec, C>): RemoteConnector<T, SqlSpec> {
  return {
    type,
    mode: 'remote',
    specOf: (body: BodyOf<'postgres' | 'mysql'>) => ({ ...connectionOf(type, body.connection), ...(body.table ? { table: body.table } : { query: body.query! }) }),
    parseSpec: (value) => sqlSpecSchema.parse(value) as SqlSpec,
    publicConfigOf: (spec) => ({ ...publicConnection(spec), ...(spec.table ? { table: spec.table } : { query: spec.query! }) }),
    ...databaseConnection<T, SqlSpec, C>(driver),
  };
}

/**
 * Writes one line per row, a megabyte of text at a time: the staging writer's await per call would otherwise
 * cost a promise per row. Answers how many rows there were.
 */
export async function writeRows<R>(rows: AsyncIterable<R>, line: (row: R) => string, writer: StagingWriter): Promise<number> {
  let text = '';
  let count = 0;
  for await (const row of rows) {
    text += line(row);
    count++;
    if (text.length >= 1024 * 1024) {
      await writer.write(text);
      text = '';
    }
  }
  await writer.write(text);
  return count;
}
