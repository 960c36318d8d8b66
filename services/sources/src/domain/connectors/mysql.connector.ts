import { connect as netConnect } from 'node:net';
import mysql, { type Connection, type FieldPacket } from 'mysql2';
import { ndjsonEncoder, uniqueNames } from '../ingest/row-encoding.ts';
import { ConnectorCheckError, type RemoteContext, type StagedColumn, type StagedColumnType } from './connector.ts';
import { closeQuietly, sqlOf, type SqlSpec } from './db-spec.ts';
import { cursorText, incrementalSql, sqlConnector, writeRows } from './database.ts';
import { networkFailure, scrub, TooLargeError } from './remote-errors.ts';

/** MySQL protocol column types whose values the loader keeps typed; every other type arrives as text. */
const MYSQL_TYPES: Record<number, StagedColumnType> = {
  0: 'DOUBLE', // DECIMAL
  1: 'BIGINT', // TINY
  2: 'BIGINT', // SHORT
  3: 'BIGINT', // LONG
  4: 'DOUBLE', // FLOAT
  5: 'DOUBLE', // DOUBLE
  7: 'TIMESTAMP', // TIMESTAMP, printed in UTC (the session time zone is UTC)
  8: 'BIGINT', // LONGLONG
  9: 'BIGINT', // INT24
  10: 'DATE',
  12: 'TIMESTAMP', // DATETIME
  13: 'BIGINT', // YEAR
  14: 'DATE', // NEWDATE
  16: 'BIGINT', // BIT
  246: 'DOUBLE', // NEWDECIMAL
};

const quoteIdent = (s: string) => `\`${s.replaceAll('`', '``')}\``;

function failure(err: unknown, spec: SqlSpec): Error {
  if (err instanceof ConnectorCheckError || err instanceof TooLargeError) return err;
  const sourceField = spec.table ? 'table' : 'query';
  const e = err as { code?: string; errno?: number; message?: string; sqlMessage?: string; fatal?: boolean };
  if (typeof e?.errno === 'number' && e.sqlMessage !== undefined) {
    const message = scrub(String(e.sqlMessage).slice(0, 300), [spec.password]);
    if (e.code === 'ER_ACCESS_DENIED_ERROR' || e.code === 'ER_DBACCESS_DENIED_ERROR' || e.code === 'ER_BAD_DB_ERROR' || e.code === 'ER_NOT_SUPPORTED_AUTH_MODE') {
      return new ConnectorCheckError('connection', `MySQL refused the connection: ${message}`);
    }
    if (e.code === 'ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION') return new ConnectorCheckError(sourceField, 'the query tried to write; a source may only read');
    return new ConnectorCheckError(sourceField, `MySQL could not run the ${spec.table ? 'read of the table' : 'query'}: ${message}`);
  }
  const net = networkFailure(err, 'connection', 'could not connect to MySQL');
  if (net) return net;
  if (e?.code === 'PROTOCOL_CONNECTION_LOST' || e?.code === 'HANDSHAKE_SSL_ERROR' || e?.code === 'HANDSHAKE_NO_SSL_SUPPORT') {
    return new ConnectorCheckError('connection', `could not connect to MySQL: ${scrub(String(e.message ?? e.code), [spec.password])}`);
  }
  return err as Error;
}

function run(conn: Connection, sql: string): Promise<unknown> {
  return new Promise((resolve, reject) => conn.query(sql, (err, rows) => (err ? reject(err) : resolve(rows))));
}

/**
 * The driver dials through our `stream` factory, which connects to the address the SSRF guard checked
 * (`pin`); `host` stays the name, so TLS verifies it. Values come back as text (dates, big numbers, JSON)
 * and the session is read-only and in UTC.
 */
async function connect(spec: SqlSpec, ctx: RemoteContext, signal: AbortSignal): Promise<Connection> {
  const { address } = await ctx.guard.pin(spec.host, spec.port, ctx.limits.connectTimeoutMs);
  const conn = mysql.createConnection({
    host: spec.host,
    port: spec.port,
    user: spec.user,
    password: spec.password ?? '',
    database: spec.database,
    stream: () => netConnect({ host: address, port: spec.port }),
    ...(spec.ssl === 'disable' ? {} : { ssl: { rejectUnauthorized: spec.ssl === 'verify-full' } }),
    connectTimeout: ctx.limits.connectTimeoutMs,
    dateStrings: true,
    supportBigNumbers: true,
    bigNumberStrings: true,
    jsonStrings: true,
    decimalNumbers: false,
    multipleStatements: false,
    charset: 'utf8mb4_general_ci',
    timezone: 'Z',
  });
  conn.on('error', () => undefined); // a dropped connection surfaces as the failed query instead
  const onAbort = () => conn.destroy();
  signal.addEventListener('abort', onAbort, { once: true });
  conn.once('end', () => signal.removeEventListener('abort', onAbort));
  await new Promise<void>((resolve, reject) => conn.connect((err) => (err ? reject(err) : resolve())));
  await run(conn, `SET SESSION time_zone = '+00:00'`);
  await run(conn, 'START TRANSACTION READ ONLY');
  return conn;
}

async function close(conn: Connection): Promise<void> {
  await closeQuietly(
    () => new Promise<void>((r) => conn.end(() => r())),
    () => conn.destroy(),
  );
}

/** MySQL's BOOLEAN is TINYINT(1): a TINY column of display width 1. A wider TINYINT stays an integer. */
const TINY = 1;

function columnsOf(fields: readonly FieldPacket[]): StagedColumn[] {
  const names = uniqueNames(fields.map((f) => f.name));
  return fields.map((f, i) => {
    const code = f.columnType ?? f.type ?? -1;
    return { name: names[i]!, type: code === TINY && f.columnLength === 1 ? 'BOOLEAN' : (MYSQL_TYPES[code] ?? 'VARCHAR') };
  });
}

export const mysqlConnector = sqlConnector<'mysql', Connection>('mysql', {
  label: 'MySQL',
  connect,
  close,
  failure,
  missingColumnCode: 'ER_BAD_FIELD_ERROR',
  /** Prepares the statement (the server parses it and resolves its tables) without running it. */
  async probe(conn, spec) {
    const columns = await new Promise<number>((resolve, reject) =>
      conn.prepare(sqlOf(spec, quoteIdent), (err, stmt) => {
        if (err) return reject(err);
        // The typings omit `columns`; the statement carries the result's column definitions.
        const n = (stmt as unknown as { columns: unknown[] }).columns.length;
        stmt.close();
        resolve(n);
      }),
    );
    if (columns === 0) throw new ConnectorCheckError('query', 'the query returns no columns; give a SELECT');
  },
  /** Streams the rows; the driver pauses the socket while the stream's buffer is full (backpressure). */
  async read(conn, spec, writer, inc) {
    // MySQL sorts NULL first in ascending order.
    const sql = incrementalSql(sqlOf(spec, quoteIdent), inc, { quote: quoteIdent, literal: (v) => conn.escape(v), nullsFirst: '' });
    const rows = conn.query({ sql, rowsAsArray: true }).stream({ highWaterMark: 2_000 });
    const seen: { columns: StagedColumn[]; encode: (values: readonly unknown[]) => string; cursorAt: number; last?: unknown[] } = {
      columns: [],
      encode: () => '',
      cursorAt: -1,
    };
    rows.on('fields', (fields: FieldPacket[]) => {
      seen.columns = columnsOf(fields);
      seen.encode = ndjsonEncoder(seen.columns);
      if (inc) seen.cursorAt = fields.findIndex((f) => f.name === inc.cursorField);
    });
    const count = await writeRows(
      rows as AsyncIterable<unknown[]>,
      (row) => {
        seen.last = row;
        return seen.encode(row);
      },
      writer,
    );
    await run(conn, 'COMMIT');
    return { columns: seen.columns, rows: count, lastCursor: cursorText(seen.last, seen.cursorAt) };
  },
});
