import { isIPv6 } from 'node:net';
import { BSON, MongoClient, type Document, type ServerHeartbeatFailedEvent } from 'mongodb';

const { EJSON } = BSON;
import { z } from 'zod';
import { ConnectorCheckError, type RemoteConnector, type RemoteContext } from './connector.ts';
import { closeQuietly, connectionOf, dbConnectionSchema, publicConnection, type DbConnection } from './db-spec.ts';
import { databaseConnection, writeRows } from './database.ts';
import { parseMongoFilter } from './mongo-filter.ts';
import { isFinalConnectFailure, networkFailure, scrub, TooLargeError } from './remote-errors.ts';

export interface MongoSpec extends DbConnection {
  collection: string;
  filter?: string;
}

const mongoSpecSchema = dbConnectionSchema.extend({ collection: z.string().min(1), filter: z.string().optional() });

const JSON_NUMBER = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/;

/** One BSON value as JSON text for the NDJSON staging file; nested documents and arrays become JSON text. */
export function bsonValueText(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  switch (typeof v) {
    case 'string':
      return JSON.stringify(v);
    case 'number':
      return Number.isFinite(v) ? String(v) : 'null';
    case 'boolean':
      return v ? 'true' : 'false';
    case 'bigint':
      return v.toString();
  }
  if (v instanceof Date) return Number.isNaN(v.getTime()) ? 'null' : JSON.stringify(v.toISOString());
  const type = (v as { _bsontype?: string })._bsontype;
  switch (type) {
    case 'ObjectId':
      return JSON.stringify((v as { toHexString(): string }).toHexString());
    case 'Long':
    case 'Decimal128': {
      const s = String(v);
      return JSON_NUMBER.test(s) ? s : 'null';
    }
    case 'Int32':
    case 'Double':
      return bsonValueText((v as { valueOf(): number }).valueOf());
    case 'Binary':
      return JSON.stringify((v as { toString(enc: string): string }).toString('base64'));
    case 'UUID':
      return JSON.stringify((v as { toHexString(): string }).toHexString());
  }
  return JSON.stringify(EJSON.stringify(v as Document, { relaxed: true }));
}

/** A document's top-level fields as one NDJSON line. */
export function documentLine(doc: Document): string {
  let line = '';
  for (const key of Object.keys(doc)) line += `${line ? ',' : '{'}${JSON.stringify(key)}:${bsonValueText(doc[key])}`;
  return line ? `${line}}\n` : '{}\n';
}

/**
 * A cursor value as canonical Extended JSON, so the next pull compares with the same BSON type (a date stays a
 * date, an ObjectId an ObjectId); undefined when the document lacks the field.
 */
function cursorOf(doc: Document, field: string): string | null | undefined {
  if (!(field in doc)) return undefined;
  const v: unknown = doc[field];
  return v === null || v === undefined ? null : EJSON.stringify({ v }, { relaxed: false }).slice('{"v":'.length, -1);
}

function parseCursor(text: string): unknown {
  return (EJSON.parse(`{"v":${text}}`, { relaxed: false }) as { v: unknown }).v;
}

function failure(err: unknown, spec: MongoSpec): Error {
  if (err instanceof ConnectorCheckError || err instanceof TooLargeError) return err;
  const e = err as { name?: string; code?: number; codeName?: string; message?: string; cause?: unknown; reason?: { servers?: Map<string, { error?: unknown }> } };
  // Server selection errors keep the real reason on the server description.
  const serverError = e?.reason?.servers ? [...e.reason.servers.values()].map((s) => s.error).find(Boolean) : undefined;
  const net = networkFailure(err, 'connection', 'could not connect to MongoDB') ?? (serverError ? networkFailure(serverError, 'connection', 'could not connect to MongoDB') : null);
  if (net) return net;
  const message = scrub(
    String(e?.message ?? 'unknown error')
      .split('\n')[0]!
      .slice(0, 300),
    [spec.password],
  );
  if (e?.code === 18 || e?.codeName === 'AuthenticationFailed' || e?.name === 'MongoMissingCredentialsError') {
    return new ConnectorCheckError('connection', `MongoDB refused the connection: ${message}`);
  }
  if (e?.name === 'MongoServerSelectionError' || e?.name === 'MongoNetworkError' || e?.name === 'MongoNetworkTimeoutError') {
    return new ConnectorCheckError('connection', `could not connect to MongoDB: ${message}`);
  }
  if (e?.name === 'MongoServerError') {
    if (e.code === 13 || e.codeName === 'Unauthorized') return new ConnectorCheckError('collection', `MongoDB refused the read: ${message}`);
    return new ConnectorCheckError('filter', `MongoDB could not run the find: ${message}`);
  }
  return err as Error;
}

/**
 * One direct connection to the named server (no replica-set discovery, which would dial hosts the server
 * names). The host is checked before connecting, and every socket the driver opens resolves through the
 * SSRF guard's `lookup`, so the address actually dialled is checked at connect time.
 */
async function connect(spec: MongoSpec, ctx: RemoteContext, signal: AbortSignal): Promise<MongoClient> {
  await ctx.guard.pin(spec.host, spec.port, ctx.limits.connectTimeoutMs);
  const host = isIPv6(spec.host) ? `[${spec.host}]` : spec.host;
  const client = new MongoClient(`mongodb://${host}:${spec.port}/`, {
    ...(spec.user ? { auth: { username: spec.user, password: spec.password ?? '' }, authSource: spec.authSource ?? 'admin' } : {}),
    directConnection: true,
    lookup: ctx.guard.lookupFor(spec.port),
    connectTimeoutMS: ctx.limits.connectTimeoutMs,
    serverSelectionTimeoutMS: ctx.limits.connectTimeoutMs,
    socketTimeoutMS: ctx.limits.idleTimeoutMs,
    maxPoolSize: 1,
    retryReads: false,
    retryWrites: false,
    readPreference: 'primaryPreferred',
    appName: 'dap-sources',
    tls: spec.ssl !== 'disable',
    ...(spec.ssl === 'require' ? { tlsAllowInvalidCertificates: true, tlsAllowInvalidHostnames: true } : {}),
  });
  const onAbort = () => void client.close(true).catch(() => undefined);
  signal.addEventListener('abort', onAbort, { once: true });
  client.once('topologyClosed', () => signal.removeEventListener('abort', onAbort));
  // Server selection waits out its whole timeout for a server that may yet come up. A refused connection (or
  // an unknown host, or TLS that cannot agree) will not, so the check answers at once, as the SQL connectors do.
  let refuse: (err: unknown) => void = () => undefined;
  const refused = new Promise<never>((_, reject) => (refuse = reject));
  const onHeartbeatFailed = (event: ServerHeartbeatFailedEvent) => {
    if (isFinalConnectFailure(event.failure)) refuse(event.failure);
  };
  client.on('serverHeartbeatFailed', onHeartbeatFailed);
  const connecting = client.connect();
  connecting.catch(() => undefined); // when the refusal wins, the close below fails it too
  try {
    await Promise.race([connecting, refused]);
  } catch (err) {
    await client.close(true).catch(() => undefined);
    throw err;
  } finally {
    client.off('serverHeartbeatFailed', onHeartbeatFailed);
  }
  return client;
}

async function close(client: MongoClient): Promise<void> {
  await closeQuietly(
    () => client.close(),
    () => undefined,
    2_000,
  );
}

async function assertCollection(client: MongoClient, spec: MongoSpec): Promise<void> {
  // Filtered here too: the wire-compatible local server ignores listCollections' filter.
  const found = (await client.db(spec.database).listCollections({ name: spec.collection }, { nameOnly: true }).toArray()).filter((c) => c.name === spec.collection);
  if (!found.length) throw new ConnectorCheckError('collection', `the collection ${spec.collection} does not exist in the database ${spec.database}`);
}

export const mongodbConnector: RemoteConnector<'mongodb', MongoSpec> = {
  type: 'mongodb',
  mode: 'remote',
  specOf(body) {
    parseMongoFilter(body.filter); // refuse a bad filter before connecting anywhere
    return { ...connectionOf('mongodb', body.connection), collection: body.collection, ...(body.filter?.trim() ? { filter: body.filter } : {}) };
  },
  parseSpec: (value) => mongoSpecSchema.parse(value) as MongoSpec,
  publicConfigOf: (spec) => ({ ...publicConnection(spec), collection: spec.collection, ...(spec.filter ? { filter: spec.filter } : {}) }),

  ...databaseConnection<'mongodb', MongoSpec, MongoClient>({
    label: 'MongoDB',
    connect,
    close,
    failure,
    async probe(client, spec) {
      await assertCollection(client, spec);
      await client.db(spec.database).collection(spec.collection).findOne(parseMongoFilter(spec.filter));
    },
    /**
     * Iterates a cursor batch by batch; the next batch is fetched only after the last one is written. An
     * incremental read adds `field >= since` to the filter and sorts by the field (documents without it first).
     */
    async read(client, spec, writer, inc) {
      await assertCollection(client, spec);
      const filter = parseMongoFilter(spec.filter);
      const query = inc?.since != null ? { $and: [filter, { [inc.cursorField]: { $gte: parseCursor(inc.since) } }] } : filter;
      const found = client.db(spec.database).collection(spec.collection).find(query, { batchSize: 1_000, promoteLongs: false });
      if (inc) found.sort({ [inc.cursorField]: 1 });
      let last: Document | undefined;
      const rows = await writeRows(
        found,
        (doc) => {
          last = doc;
          return documentLine(doc);
        },
        writer,
      );
      // A later incremental pull may find nothing new; the first one needs documents for the columns.
      if (!rows && inc?.since == null) throw new ConnectorCheckError(spec.filter ? 'filter' : 'collection', 'no documents match, so the source would have no columns');
      return { checkFieldNames: true, rows, ...(inc ? { lastCursor: last ? cursorOf(last, inc.cursorField) : null } : {}) };
    },
  }),
};
