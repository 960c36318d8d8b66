import { isIP } from 'node:net';
import pg from 'pg';
import { ndjsonEncoder, uniqueNames } from '../ingest/row-encoding.ts';
import { ConnectorCheckError, type IncrementalRead, type RemoteContext, type StagedColumn, type StagedColumnType } from './connector.ts';
import { closeQuietly, sqlOf, type SqlSpec } from './db-spec.ts';
import { cursorText, incrementalSql, sqlConnector } from './database.ts';
import { networkFailure, scrub, TooLargeError } from './remote-errors.ts';

/** PostgreSQL type oids whose values the loader keeps typed; every other type arrives as its text form. */
const PG_TYPES: Record<number, StagedColumnType> = {
  16: 'BOOLEAN',
  20: 'BIGINT',
  21: 'BIGINT',
  23: 'BIGINT',
  26: 'BIGINT',
  700: 'DOUBLE',
  701: 'DOUBLE',
  1700: 'DOUBLE',
  1082: 'DATE',
  1114: 'TIMESTAMP',
  1184: 'TIMESTAMP', // timestamptz, printed in UTC (the session is set to UTC)
};

/** Every value stays the text PostgreSQL sent: no Date or number parsing on the event loop; the encoder types it. */
const RAW_TEXT = { getTypeParser: () => (value: string) => value } as unknown as pg.CustomTypesConfig;

const quoteIdent = (s: string) => `"${s.replaceAll('"', '""')}"`;

/**
 * Rows per FETCH adapt so one batch is about this many bytes of NDJSON, within bounds: a batch is encoded in
 * one synchronous run, so it must stay small enough (a few ms of work) for the event loop to keep turning.
 */
const BATCH_TARGET_BYTES = 1024 * 1024;
const BATCH_MIN = 50;
const BATCH_MAX = 2_000;

/** The server asked for a password and the source has none. */
class PasswordRequiredError extends Error {}

/**
 * The password as a function: pg then neither falls back to the service's own PGPASSWORD or ~/.pgpass (which
 * would send the platform's password to a customer's server) nor fails deep in SCRAM with an internal error
 * when the server asks for a password the source does not have.
 */
function passwordOf(spec: SqlSpec): () => Promise<string> {
  return async () => {
    if (!spec.password) throw new PasswordRequiredError();
    return spec.password;
  };
}

function failure(err: unknown, spec: SqlSpec): Error {
  if (err instanceof ConnectorCheckError || err instanceof TooLargeError) return err;
  if (err instanceof PasswordRequiredError) {
    return new ConnectorCheckError(
      'connection',
      `PostgreSQL asks for a password${spec.user ? ` for the user ${spec.user}` : ''} and the source has none: give connection.password`,
    );
  }
  const sourceField = spec.table ? 'table' : 'query';
  const net = networkFailure(err, 'connection', 'could not connect to PostgreSQL');
  if (net) return net;
  const e = err as { code?: string; message?: string };
  const message = scrub(
    String(e?.message ?? 'unknown error')
      .split('\n')[0]!
      .slice(0, 300),
    [spec.password],
  );
  if (typeof e?.code === 'string' && /^[0-9A-Z]{5}$/.test(e.code)) {
    if (e.code.startsWith('28') || e.code === '3D000') return new ConnectorCheckError('connection', `PostgreSQL refused the connection: ${message}`);
    if (e.code === '25006' || (e.code === '0A000' && /data-modifying/.test(message)))
      return new ConnectorCheckError(sourceField, 'the query tried to write; a source may only read');
    // The query is wrapped in a cursor, so a write after a WITH surfaces as a syntax error at its keyword.
    const write = e.code === '42601' ? /at or near "(INSERT|UPDATE|DELETE|MERGE)"/i.exec(message) : null;
    if (write) return new ConnectorCheckError(sourceField, `only one read-only SELECT is allowed, not ${write[1]!.toUpperCase()}`);
    return new ConnectorCheckError(sourceField, `PostgreSQL could not run the ${spec.table ? 'read of the table' : 'query'}: ${message}`);
  }
  if (/timeout|terminated/i.test(message)) return new ConnectorCheckError('connection', `could not connect to PostgreSQL: ${message}`);
  if (/SSL|TLS|certificate/i.test(message)) return new ConnectorCheckError('connection', `could not connect to PostgreSQL: ${message}`);
  return err as Error;
}

/** Connects to the checked address of the host (the SSRF guard's `pin`); TLS still verifies the host name. */
async function connect(spec: SqlSpec, ctx: RemoteContext, signal: AbortSignal): Promise<pg.Client> {
  const { address } = await ctx.guard.pin(spec.host, spec.port, ctx.limits.connectTimeoutMs);
  const client = new pg.Client({
    host: address,
    port: spec.port,
    database: spec.database,
    user: spec.user,
    password: passwordOf(spec),
    ssl: spec.ssl === 'disable' ? false : { rejectUnauthorized: spec.ssl === 'verify-full', ...(isIP(spec.host) ? {} : { servername: spec.host }) },
    connectionTimeoutMillis: ctx.limits.connectTimeoutMs,
    application_name: 'dap-sources',
    types: RAW_TEXT,
  });
  client.on('error', () => undefined); // a dropped connection surfaces as the failed query instead
  const onAbort = () => destroy(client);
  signal.addEventListener('abort', onAbort, { once: true });
  client.once('end', () => signal.removeEventListener('abort', onAbort));
  await client.connect();
  await client.query(`SET TimeZone = 'UTC'; SET DateStyle = 'ISO, YMD'; SET IntervalStyle = 'iso_8601'; SET extra_float_digits = 3`);
  return client;
}

function destroy(client: pg.Client): void {
  (client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy();
}

async function close(client: pg.Client): Promise<void> {
  await closeQuietly(
    () => client.end(),
    () => destroy(client),
  );
}

/** Opens a read-only transaction with a server-side cursor over the source's statement (extended protocol: one statement only). */
async function openCursor(client: pg.Client, spec: SqlSpec, name: string, inc: IncrementalRead | null = null): Promise<void> {
  await client.query('BEGIN READ ONLY');
  const sql = incrementalSql(sqlOf(spec, quoteIdent), inc, { quote: quoteIdent, literal: (v) => client.escapeLiteral(v), nullsFirst: ' NULLS FIRST' });
  await client.query({ text: `DECLARE ${name} NO SCROLL CURSOR FOR ${sql}`, queryMode: 'extended' } as pg.QueryConfig);
}

function columnsOf(fields: readonly pg.FieldDef[]): StagedColumn[] {
  const names = uniqueNames(fields.map((f) => f.name));
  return fields.map((f, i) => ({ name: names[i]!, type: PG_TYPES[f.dataTypeID] ?? 'VARCHAR' }));
}

export const postgresConnector = sqlConnector<'postgres', pg.Client>('postgres', {
  label: 'PostgreSQL',
  connect,
  close,
  failure,
  missingColumnCode: '42703',
  async probe(client, spec) {
    await openCursor(client, spec, 'dap_probe');
    await client.query('FETCH 1 FROM dap_probe');
    await client.query('ROLLBACK');
  },
  async read(client, spec, writer, inc) {
    await openCursor(client, spec, 'dap_cursor', inc);
    let columns: StagedColumn[] | null = null;
    let encode: ((values: readonly unknown[]) => string) | null = null;
    let cursorAt = -1;
    let last: unknown[] | undefined;
    let rows = 0;
    for (let batch = 500; ;) {
      const res = await client.query({ text: `FETCH FORWARD ${batch} FROM dap_cursor`, rowMode: 'array' });
      if (!columns) {
        columns = columnsOf(res.fields);
        encode = ndjsonEncoder(columns);
        if (inc) cursorAt = res.fields.findIndex((f) => f.name === inc.cursorField);
      }
      let text = '';
      for (const row of res.rows as unknown[][]) text += encode!(row);
      await writer.write(text);
      rows += res.rows.length;
      if (res.rows.length) last = res.rows[res.rows.length - 1] as unknown[];
      if (res.rows.length < batch) break;
      const bytesPerRow = Math.max(1, text.length / res.rows.length);
      batch = Math.min(BATCH_MAX, Math.max(BATCH_MIN, Math.floor(BATCH_TARGET_BYTES / bytesPerRow)));
    }
    await client.query('COMMIT');
    return { columns: columns ?? [], rows, lastCursor: cursorText(last, cursorAt) };
  },
});
