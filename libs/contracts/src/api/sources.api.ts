import { z } from 'zod';
import { isoDate, listOf, safeKey, namedResourceSchema } from './common.ts';
import { sqlQueryProblem } from './sql-query.ts';

export const SOURCE_TYPES = ['inline', 'csv', 'json', 'ndjson', 'url', 'postgres', 'mysql', 'mongodb'] as const;
/** Types whose data lives elsewhere: every sync pulls it again with the stored (encrypted) connection details. */
export const REMOTE_SOURCE_TYPES = ['url', 'postgres', 'mysql', 'mongodb'] as const;
export const SOURCE_STATUSES = ['pending', 'syncing', 'ready', 'failed'] as const;
export const COLUMN_TYPES = ['string', 'integer', 'number', 'boolean', 'timestamp'] as const;
export const FILE_FORMATS = ['csv', 'json', 'ndjson'] as const;
export const SSL_MODES = ['disable', 'require', 'verify-full'] as const;
export type SourceType = (typeof SOURCE_TYPES)[number];
export type RemoteSourceType = (typeof REMOTE_SOURCE_TYPES)[number];
export type SourceStatus = (typeof SOURCE_STATUSES)[number];
export type FileFormat = (typeof FILE_FORMATS)[number];
export type SslMode = (typeof SSL_MODES)[number];

export const MAX_INLINE_ROWS = 10_000;
export const MAX_CSV_CHARS = 5_000_000;
/** Uploaded file contents (CSV, JSON, NDJSON) travel as one string field of the JSON body. */
export const MAX_UPLOAD_CHARS = MAX_CSV_CHARS;

/** The MongoDB query operators a source filter may use: equality and ranges, nothing that runs code. */
export const MONGO_FILTER_OPERATORS = ['$eq', '$ne', '$gt', '$gte', '$lt', '$lte', '$in', '$nin', '$exists', '$and', '$or', '$nor', '$not'] as const;

const scalar = z.union([z.string().max(10_000), z.number(), z.boolean(), z.null()]);
const rowSchema = z.record(safeKey, scalar).refine((r) => Object.keys(r).length > 0 && Object.keys(r).length <= 500, { message: 'a row has 1 to 500 fields' });

const name = z.string().trim().min(1).max(200);

function parsedUrl(value: string): URL | null {
  try {
    return new URL(value);
  } catch {
    return null;
  }
}

/** Only http(s); credentials belong in `headers` (stored encrypted), not in the URL. */
const fileUrl = z
  .string()
  .max(4096)
  .superRefine((value, ctx) => {
    const u = parsedUrl(value);
    if (!u) return void ctx.addIssue({ code: 'custom', message: 'must be an absolute http(s) URL' });
    if (u.protocol !== 'http:' && u.protocol !== 'https:') ctx.addIssue({ code: 'custom', message: 'the URL must use http or https' });
    if (u.username || u.password) ctx.addIssue({ code: 'custom', message: 'the URL may not contain credentials; send them in headers' });
    if (!u.hostname) ctx.addIssue({ code: 'custom', message: 'the URL must name a host' });
  })
  .describe('http(s) URL of a CSV, JSON (array of objects) or NDJSON file. Redirects are not followed.');

const FORBIDDEN_HEADERS = new Set(['host', 'content-length', 'transfer-encoding', 'connection', 'upgrade', 'te', 'trailer', 'keep-alive', 'accept-encoding', 'expect']);
const headerName = z
  .string()
  .regex(/^[A-Za-z0-9!#%&'*+.^_`|~-]{1,100}$/, 'must be an HTTP header name')
  .refine((h) => !FORBIDDEN_HEADERS.has(h.toLowerCase()) && !h.toLowerCase().startsWith('proxy-'), { message: 'this header is set by the service' });
const headerValue = z
  .string()
  .max(4096)
  .refine((v) => !/[\r\n]/.test(v) && !v.includes('\u0000'), { message: 'header values may not contain line breaks' });

const hostName = z
  .string()
  .min(1)
  .max(253)
  .regex(/^(\[[0-9A-Fa-f:.]+\]|[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*|[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?)$/, 'must be a host name or an IP address');

const URL_SCHEMES: Record<'postgres' | 'mysql' | 'mongodb', readonly string[]> = {
  postgres: ['postgres:', 'postgresql:'],
  mysql: ['mysql:', 'mariadb:'],
  mongodb: ['mongodb:'],
};

/** Connection details, as a URL or as parts. Passwords are write-only: stored encrypted, never returned. */
function dbConnection(type: 'postgres' | 'mysql' | 'mongodb') {
  const schemes = URL_SCHEMES[type];
  return z
    .strictObject({
      url: z
        .string()
        .max(4096)
        .optional()
        .describe(`a connection URL (${schemes.map((s) => `${s}//`).join(' or ')}user:password@host:port/database); or give the parts instead`),
      host: hostName.optional(),
      port: z.number().int().min(1).max(65535).optional(),
      database: z.string().min(1).max(128).optional(),
      user: z.string().min(1).max(128).optional(),
      password: z.string().max(1024).optional().describe('write-only: stored encrypted, never returned'),
      ssl: z.enum(SSL_MODES).optional().describe('disable (default), require (encrypted, unverified) or verify-full'),
      ...(type === 'mongodb' ? { authSource: z.string().min(1).max(128).optional() } : {}),
    })
    .superRefine((c, ctx) => {
      const parts = (['host', 'port', 'database', 'user', 'password', 'authSource'] as const).filter((k) => (c as Record<string, unknown>)[k] !== undefined);
      if (c.url !== undefined) {
        if (parts.length) ctx.addIssue({ code: 'custom', path: ['url'], message: `give either url or the parts (${parts.join(', ')}), not both` });
        const u = parsedUrl(c.url);
        if (type === 'mongodb' && c.url.startsWith('mongodb+srv:')) {
          ctx.addIssue({ code: 'custom', path: ['url'], message: 'mongodb+srv URLs are not supported; give the host of the server to read from' });
        } else if (!u || !schemes.includes(u.protocol)) {
          ctx.addIssue({ code: 'custom', path: ['url'], message: `must be a ${schemes.map((s) => `${s}//`).join(' or ')} URL` });
        } else {
          if (!u.hostname) ctx.addIssue({ code: 'custom', path: ['url'], message: 'the URL must name a host' });
          if (u.hostname.includes(',') || u.host.includes(',')) ctx.addIssue({ code: 'custom', path: ['url'], message: 'give one host' });
          if (type !== 'mongodb' && !u.username) ctx.addIssue({ code: 'custom', path: ['url'], message: 'the URL must name a user' });
          if (u.pathname.replace(/^\//, '') === '') ctx.addIssue({ code: 'custom', path: ['url'], message: 'the URL must name a database' });
        }
        return;
      }
      if (!c.host) ctx.addIssue({ code: 'custom', path: ['host'], message: 'give url, or host and the other parts' });
      if (!c.database) ctx.addIssue({ code: 'custom', path: ['database'], message: 'required' });
      if (type !== 'mongodb' && !c.user) ctx.addIssue({ code: 'custom', path: ['user'], message: 'required' });
    });
}

const tableName = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[\p{L}_][\p{L}\p{N}_$]*(\.[\p{L}_][\p{L}\p{N}_$]*)?$/u, 'a table name, optionally schema-qualified (schema.table); use query for other names')
  .describe('a table (or view) to read whole');
const sqlQuery = z
  .string()
  .trim()
  .min(1)
  .max(100_000)
  .describe('one read-only statement (SELECT, WITH … SELECT, VALUES or TABLE), no other statement after it; it runs in a read-only transaction and its rows are streamed');

/** Interval units a schedule's `every` takes, in milliseconds. */
const DURATION_UNITS = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
export const MIN_SYNC_INTERVAL_MS = 60_000;
export const MAX_SYNC_INTERVAL_MS = 366 * 86_400_000;

/** The milliseconds of an interval such as `15m`; null when it is not one. */
export function intervalMs(every: string): number | null {
  const m = /^([1-9]\d{0,8})([smhd])$/.exec(every);
  return m ? Number(m[1]) * DURATION_UNITS[m[2] as keyof typeof DURATION_UNITS] : null;
}

function isTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat('en', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

const every = z
  .string()
  .refine((v) => intervalMs(v) !== null, 'a duration: a number and a unit (s, m, h or d), such as 15m, 6h or 1d')
  .refine((v) => {
    const ms = intervalMs(v);
    return ms === null || (ms >= MIN_SYNC_INTERVAL_MS && ms <= MAX_SYNC_INTERVAL_MS);
  }, 'at least 1m and at most 366d')
  .describe('sync this often, counted from the start of the last scheduled sync: a number and a unit (s, m, h, d), at least 1m');
const cron = z
  .string()
  .trim()
  .min(1)
  .max(200)
  .refine((v) => v.split(/\s+/).length === 5, 'a cron expression of five fields: minute hour day-of-month month day-of-week')
  .describe('a five-field cron expression (minute hour day-of-month month day-of-week), such as `0 * * * *`');
const timezone = z
  .string()
  .min(1)
  .max(100)
  .refine(isTimeZone, 'an IANA time zone such as Europe/Berlin')
  .describe('the time zone the cron expression is read in (IANA); UTC by default');

/** When a remote source syncs by itself: every so often, or at the times of a cron expression. */
export const syncScheduleSchema = z.union([z.strictObject({ every }), z.strictObject({ cron, timezone: timezone.optional() })]).meta({
  id: 'SyncSchedule',
  description:
    'When the source syncs by itself: `{ "every": "15m" }`, or `{ "cron": "0 * * * *", "timezone": "Europe/Berlin" }`. A failed scheduled sync is retried with backoff before the next regular one.',
  examples: [{ every: '15m' }, { cron: '0 6 * * 1-5', timezone: 'Europe/Berlin' }],
});
export type SyncSchedule = z.infer<typeof syncScheduleSchema>;
const scheduleField = syncScheduleSchema.optional().describe('url and database sources only: sync by itself on this schedule');

/**
 * What a sync does when the data's columns differ from the source's (added, removed, or of another type):
 * `evolve` (the default) publishes the new data and schema; `freeze` fails the sync, naming the columns, and
 * keeps the old data; `quarantine` keeps the old schema, loads the rows that fit it and sets the others
 * aside (GET /v1/sources/{id}/quarantine). Either way `source.schema_changed` says what changed.
 */
export const SCHEMA_POLICIES = ['evolve', 'freeze', 'quarantine'] as const;
export type SchemaPolicy = (typeof SCHEMA_POLICIES)[number];
const schemaPolicy = z
  .enum(SCHEMA_POLICIES)
  .describe(
    "what a sync does when the data's columns change: evolve (default) takes the new schema; freeze fails the sync and keeps the old data; quarantine keeps the old schema, loads the rows that fit it and sets the others aside as CSV",
  );

/** A column name as the incremental settings take it: the name the data has (no quoting). */
const fieldName = z
  .string()
  .min(1)
  .max(255)
  .refine((v) => !v.includes('\u0000'), 'must be a column name');

/**
 * Incremental syncs (database sources): each sync pulls only the rows whose `cursorField` is at or past the
 * last value the previous sync saw. With `primaryKey` the pulled rows replace the stored ones with the same key
 * (the newest version of a row wins); without it they are appended, and rows at the last cursor value that
 * are already stored are not appended twice. `POST /v1/sources/{id}/sync` with `{ "mode": "full" }` pulls
 * everything again and restarts from there.
 */
export const incrementalSchema = z
  .strictObject({
    cursorField: fieldName.describe('a column (or document field) that grows as rows are added or changed, such as updated_at or an increasing id'),
    primaryKey: z
      .array(fieldName)
      .min(1)
      .max(16)
      .refine((k) => new Set(k).size === k.length, 'each column may appear once')
      .optional()
      .describe('the columns that identify a row; pulled rows replace the stored row with the same key. Without it, pulled rows are appended'),
  })
  .meta({
    id: 'IncrementalSync',
    description:
      'Database sources only: each sync pulls the rows whose cursorField is at or past the last value seen (rows that share that value are not lost), and merges them by primaryKey when given (else appends). A full re-sync (POST /v1/sources/{id}/sync with mode full) pulls everything again.',
  });
export type IncrementalSettings = z.infer<typeof incrementalSchema>;
const incrementalField = incrementalSchema.optional().describe('database sources only: pull only new and changed rows on each sync');

/** How a sync pulls: `full` reads everything; `incremental` only rows past the last cursor value. */
export const SYNC_MODES = ['full', 'incremental'] as const;
export type SyncMode = (typeof SYNC_MODES)[number];

/** POST /v1/sources/{id}/sync: `{ "mode": "full" }` pulls everything again and resets the incremental cursor. */
export const syncSourceBody = z
  .strictObject({
    mode: z.enum(SYNC_MODES).optional().describe("full: pull everything again and restart the incremental cursor from there; incremental (default): as the source's settings say"),
  })
  .meta({ id: 'SyncSource', examples: [{ mode: 'full' }] })
  .optional();
export type SyncSourceBody = z.infer<typeof syncSourceBody>;

function sqlSource<T extends 'postgres' | 'mysql'>(type: T) {
  return z
    .strictObject({
      type: z.literal(type),
      name,
      connection: dbConnection(type),
      table: tableName.optional(),
      query: sqlQuery.optional(),
      schedule: scheduleField,
      schemaPolicy: schemaPolicy.optional(),
      incremental: incrementalField,
    })
    .superRefine((b, ctx) => {
      if ((b.table === undefined) === (b.query === undefined)) ctx.addIssue({ code: 'custom', path: ['table'], message: 'give exactly one of table or query' });
      const problem = b.query === undefined ? null : sqlQueryProblem(b.query, type);
      if (problem) ctx.addIssue({ code: 'custom', path: ['query'], message: problem });
    });
}

export const createSourceBody = z
  .discriminatedUnion('type', [
    z.strictObject({ type: z.literal('inline'), name, rows: z.array(rowSchema).min(1).max(MAX_INLINE_ROWS) }),
    z.strictObject({ type: z.literal('csv'), name, csv: z.string().min(1).max(MAX_CSV_CHARS).describe('CSV text; the first row is the header') }),
    z.strictObject({ type: z.literal('json'), name, json: z.string().min(1).max(MAX_UPLOAD_CHARS).describe('JSON text: an array of objects') }),
    z.strictObject({ type: z.literal('ndjson'), name, ndjson: z.string().min(1).max(MAX_UPLOAD_CHARS).describe('NDJSON text: one object per line') }),
    z.strictObject({
      type: z.literal('url'),
      name,
      url: fileUrl,
      format: z.enum(FILE_FORMATS).optional().describe('the file format; by default taken from the Content-Type, then the file extension'),
      headers: z
        .record(headerName, headerValue)
        .refine((h) => Object.keys(h).length <= 20, { message: 'at most 20 headers' })
        .optional()
        .describe('request headers such as Authorization; write-only: stored encrypted, only their names are returned'),
      schedule: scheduleField,
      schemaPolicy: schemaPolicy.optional(),
    }),
    sqlSource('postgres'),
    sqlSource('mysql'),
    z.strictObject({
      type: z.literal('mongodb'),
      name,
      connection: dbConnection('mongodb'),
      collection: z
        .string()
        .min(1)
        .max(255)
        .refine((v) => !v.includes('$') && !v.includes('\u0000'), 'must be a collection name'),
      filter: z
        .string()
        .max(20_000)
        .optional()
        .describe(
          `a MongoDB query document as JSON text (Extended JSON values such as {"$date": "2024-01-01T00:00:00Z"} are allowed); only ${MONGO_FILTER_OPERATORS.join(' ')} are accepted`,
        ),
      schedule: scheduleField,
      schemaPolicy: schemaPolicy.optional(),
      incremental: incrementalField,
    }),
  ])
  .meta({
    id: 'CreateSource',
    examples: [
      { type: 'inline', name: 'Orders', rows: [{ id: 1, amount: 12.5, country: 'NO', paid: true, at: '2024-05-01T10:00:00Z' }] },
      { type: 'csv', name: 'Sales', csv: 'region,units\nnorth,3\nsouth,7\n' },
      { type: 'url', name: 'Daily export', url: 'https://example.com/exports/orders.csv', schedule: { cron: '0 6 * * *', timezone: 'Europe/Berlin' } },
      { type: 'postgres', name: 'Orders DB', connection: { host: 'db.example.com', database: 'shop', user: 'reader', password: 'secret' }, table: 'public.orders' },
      {
        type: 'mysql',
        name: 'Orders (incremental)',
        connection: { url: 'mysql://reader:secret@db.example.com:3306/shop' },
        table: 'orders',
        incremental: { cursorField: 'updated_at', primaryKey: ['id'] },
      },
      { type: 'mongodb', name: 'Events', connection: { url: 'mongodb://reader:secret@mongo.example.com:27017/app' }, collection: 'events', filter: '{"kind": "click"}' },
    ],
  });
export type CreateSourceBody = z.infer<typeof createSourceBody>;

/** PATCH /v1/sources/{id}: the settings that can change after creation. */
export const updateSourceBody = z
  .strictObject({
    schedule: syncScheduleSchema.nullable().optional().describe('a new schedule (url and database sources only), or null to stop syncing by itself'),
    schemaPolicy: schemaPolicy.optional(),
    incremental: incrementalSchema
      .nullable()
      .optional()
      .describe('new incremental settings (database sources only; the next sync is full and the cursor restarts from it), or null to pull everything on every sync'),
  })
  .refine((b) => b.schedule !== undefined || b.schemaPolicy !== undefined || b.incremental !== undefined, { message: 'give schedule, schemaPolicy or incremental' })
  .meta({
    id: 'UpdateSource',
    examples: [{ schedule: { every: '1h' } }, { schedule: null }, { schemaPolicy: 'freeze' }, { incremental: { cursorField: 'updated_at', primaryKey: ['id'] } }],
  });
export type UpdateSourceBody = z.infer<typeof updateSourceBody>;

/**
 * Streamed uploads (`POST /v1/sources/upload`, `PUT /v1/sources/{id}/data`): the file is the raw request body
 * (or the `file` part of a multipart form), streamed to disk, so it is not held in memory and may be large.
 */
export const UPLOAD_MEDIA_TYPES = ['text/csv', 'application/x-ndjson', 'application/json', 'multipart/form-data'] as const;
/** The file format each raw body media type carries (`application/json`: an array of objects). */
export const UPLOAD_FORMAT_OF_MEDIA_TYPE: Readonly<Record<string, FileFormat>> = Object.freeze({
  'text/csv': 'csv',
  'application/x-ndjson': 'ndjson',
  'application/ndjson': 'ndjson',
  'application/json': 'json',
});
/** The multipart part holding the file; its other parts may be the fields `name` and `format`. */
export const UPLOAD_FILE_FIELD = 'file';

export const uploadSourceQuery = z.strictObject({
  name: name.optional().describe('the source name; required, here or as the multipart field `name`'),
  format: z.enum(FILE_FORMATS).optional().describe("the file format; by default the body's Content-Type (for multipart: the file part's type, then its file name's extension)"),
});
export type UploadSourceQuery = z.infer<typeof uploadSourceQuery>;

export const replaceSourceDataQuery = z.strictObject({
  format: z.enum(FILE_FORMATS).optional().describe("the file format; it must be the source's type (csv, json or ndjson)"),
});

/** The documented shape of a streamed upload body (the OpenAPI document's binary file). */
export const uploadFileSchema = z.string().meta({ id: 'UploadFile', format: 'binary', description: 'the file: CSV (header row first), a JSON array of objects, or NDJSON' });

export const columnSchema = z.object({ name: z.string(), type: z.enum(COLUMN_TYPES) });
export type Column = z.infer<typeof columnSchema>;

/** What a source was created with, minus every secret. Upload sources have an empty config. */
export const sourceConfigSchema = z
  .object({
    url: z.string().optional().describe('the file URL; a query string (which may carry a token) is shown as ?[redacted]'),
    format: z.enum(FILE_FORMATS).optional(),
    headers: z.array(z.string()).optional().describe('names of the request headers sent; their values are write-only'),
    host: z.string().optional(),
    port: z.number().int().optional(),
    database: z.string().optional(),
    user: z.string().optional(),
    ssl: z.enum(SSL_MODES).optional(),
    authSource: z.string().optional(),
    table: z.string().optional(),
    query: z.string().optional(),
    collection: z.string().optional(),
    filter: z.string().optional(),
    hasPassword: z.boolean().optional().describe('a password is stored (it is never returned)'),
  })
  .meta({ id: 'SourceConfig' });
export type SourceConfigDto = z.infer<typeof sourceConfigSchema>;

/** How the source's last finished sync went; the source keeps its last good data when a later sync fails. */
export const SYNC_OUTCOMES = ['succeeded', 'failed'] as const;
export const sourceSyncSchema = z
  .object({
    status: z.enum(SYNC_OUTCOMES),
    error: z.string().nullable().describe('why the sync failed; null when it succeeded'),
    at: isoDate.describe('when the sync finished (ISO-8601 UTC)'),
    mode: z.enum(SYNC_MODES).optional().describe('how the sync pulled: everything (full) or only rows past the last cursor value (incremental)'),
    rowsPulled: z.number().int().optional().describe('rows the sync read from the origin (a succeeded sync)'),
    rowsMerged: z
      .number()
      .int()
      .optional()
      .describe('rows of the pull written into the data: all of them on a full sync; on an incremental one the new rows and new versions of rows (a succeeded sync)'),
  })
  .meta({ id: 'SourceSync' });
export type SourceSyncDto = z.infer<typeof sourceSyncSchema>;

export const sourceSchema = namedResourceSchema
  .extend({
    type: z.enum(SOURCE_TYPES),
    config: sourceConfigSchema,
    status: z
      .enum(SOURCE_STATUSES)
      .describe(
        '`ready` while the source has data to query, even when a later sync failed (see `lastSync`); `failed` only when no sync has ever succeeded; `pending` and `syncing` while a sync waits or runs (a source that has data stays queryable on it meanwhile)',
      ),
    error: z.string().nullable().describe('why the source has no data (status `failed`); null otherwise'),
    schema: z.array(columnSchema),
    rowCount: z.number().int().describe('rows in the data queries read (the last successful sync)'),
    lastSyncedAt: isoDate.nullable().describe('when the data queries read was synced (the last successful sync; ISO-8601 UTC)'),
    lastSync: sourceSyncSchema.nullable().describe('the outcome of the last finished sync, successful or not; null until the first one finishes'),
    schedule: syncScheduleSchema.nullable().describe('when the source syncs by itself; null when it syncs only on request'),
    schemaPolicy: z.enum(SCHEMA_POLICIES).describe("what a sync does when the data's columns change: evolve, freeze or quarantine"),
    quarantine: z
      .object({ rowCount: z.number().int(), at: isoDate })
      .nullable()
      .describe('the rows the last quarantining sync set aside (GET /v1/sources/{id}/quarantine), and when; null when none were'),
    incremental: incrementalSchema
      .extend({
        primaryKey: z.array(z.string()).nullable().describe('the key pulled rows are merged by; null: they are appended'),
        cursor: z.string().nullable().describe('the last cursor value synced, as the origin printed it (the next sync pulls rows at or past it); null until a sync saw one'),
      })
      .nullable()
      .describe('incremental sync settings and state (database sources); null when every sync pulls everything'),
    nextSyncAt: isoDate
      .nullable()
      .describe('when the next scheduled sync (or the retry of a failed one) starts, give or take the sweep interval (ISO-8601 UTC); null without a schedule'),
    createdAt: isoDate,
    updatedAt: isoDate,
  })
  .meta({ id: 'Source' });
export type SourceDto = z.infer<typeof sourceSchema>;
/** The quarantined rows as CSV: every column of the data that was read, header first. */
export const QUARANTINE_CSV_MEDIA_TYPE = 'text/csv';
export const quarantineCsvSchema = z.string().meta({ id: 'QuarantineCsv', description: 'CSV (RFC 4180) with a header row: the rows a sync set aside, with every column it read' });
export const sourceListSchema = listOf(sourceSchema).meta({ id: 'SourceList' });
