import { useState, type ChangeEvent, type FormEvent } from 'react';
import { ApiError, unwrap, type RequestBodyOf } from '../api/client.ts';
import type { SourceType } from '../api/types.ts';
import { Button, ButtonLink, Card, ErrorBanner, Field, PageHeader } from '../components/ui.tsx';
import { useApi, useNotify } from '../context.tsx';
import { useAction, useDocumentTitle } from '../hooks.ts';
import { navigate } from '../router.tsx';

interface FieldSpec {
  name: string;
  label: string;
  kind: 'text' | 'password' | 'number' | 'textarea' | 'select';
  hint?: string;
  placeholder?: string;
  required?: boolean;
  /** A file picker beside this textarea: a picked file is uploaded as it is (streamed), pasted text as JSON. */
  accept?: string;
  mono?: boolean;
  rows?: number;
  options?: readonly { value: string; label: string }[];
  /** Where the API reports this field's errors (default: its name). */
  apiPath?: string;
  /** Shown only when this holds for the current values. */
  showIf?: (v: Record<string, string>) => boolean;
  /** Shares a row with the next field on wide screens. */
  half?: boolean;
}

interface TypeSpec {
  label: string;
  description: string;
  icon: string;
  fields: FieldSpec[];
  example?: Record<string, string>;
  /** The request body's type-specific part; throws an ApiError-shaped problem for local mistakes. */
  toBody: (v: Record<string, string>) => Record<string, unknown>;
}

class LocalProblem extends Error {
  readonly path: string;
  constructor(path: string, message: string) {
    super(message);
    this.path = path;
  }
}

const EXAMPLE_ROWS = `[\n${[
  { country: 'FR', amount: 10.5, units: 1, at: '2025-01-03T10:00:00Z' },
  { country: 'FR', amount: 4.5, units: 3, at: '2025-01-04T12:30:00Z' },
  { country: 'DE', amount: 7, units: 2, at: '2025-01-04T15:10:00Z' },
  { country: 'US', amount: 20, units: 5, at: '2025-01-05T09:45:00Z' },
]
  .map((r) => `  ${JSON.stringify(r).replace(/,"/g, ', "').replace(/":/g, '": ')}`)
  .join(',\n')}\n]`;

const text = (v: Record<string, string>, name: string, what: string) => {
  const value = v[name] ?? '';
  if (!value.trim()) throw new LocalProblem(name, `Add the ${what}`);
  return value;
};

const optional = (v: Record<string, string>, name: string) => {
  const value = (v[name] ?? '').trim();
  return value === '' ? undefined : value;
};

/** Connection details as a URL or as parts; the API refuses a mix. */
function connectionOf(v: Record<string, string>, type: 'postgres' | 'mysql' | 'mongodb'): Record<string, unknown> {
  if ((v.connectWith ?? 'parts') === 'url') return { url: text(v, 'connUrl', 'connection URL') };
  const port = optional(v, 'port');
  if (port !== undefined && !/^\d+$/.test(port)) throw new LocalProblem('port', 'The port is a number, like 5432');
  const c: Record<string, unknown> = {
    host: text(v, 'host', 'host name'),
    ...(port ? { port: Number(port) } : {}),
    database: text(v, 'database', 'database name'),
    ...(type !== 'mongodb' ? { user: text(v, 'user', 'user name') } : optional(v, 'user') ? { user: optional(v, 'user') } : {}),
    ...(v.password ? { password: v.password } : {}),
    ...(optional(v, 'ssl') ? { ssl: optional(v, 'ssl') } : {}),
  };
  if (type === 'mongodb' && optional(v, 'authSource')) c.authSource = optional(v, 'authSource');
  return c;
}

const byParts = (v: Record<string, string>) => (v.connectWith ?? 'parts') === 'parts';
const byUrl = (v: Record<string, string>) => v.connectWith === 'url';

function connectionFields(type: 'postgres' | 'mysql' | 'mongodb', defaultPort: string): FieldSpec[] {
  const scheme = type === 'postgres' ? 'postgres' : type === 'mysql' ? 'mysql' : 'mongodb';
  return [
    {
      name: 'connectWith',
      label: 'Connect with',
      kind: 'select',
      options: [
        { value: 'parts', label: 'Host, database and user' },
        { value: 'url', label: 'A connection URL' },
      ],
    },
    {
      name: 'connUrl',
      label: 'Connection URL',
      kind: 'password',
      mono: true,
      apiPath: 'connection.url',
      showIf: byUrl,
      placeholder: `${scheme}://user:password@host:${defaultPort}/database`,
      hint: 'Stored encrypted; only the host and database are shown afterwards.',
    },
    { name: 'host', label: 'Host', kind: 'text', mono: true, apiPath: 'connection.host', showIf: byParts, placeholder: 'db.example.com', half: true },
    { name: 'port', label: 'Port', kind: 'number', apiPath: 'connection.port', showIf: byParts, placeholder: defaultPort, half: true },
    { name: 'database', label: 'Database', kind: 'text', mono: true, apiPath: 'connection.database', showIf: byParts, half: true },
    { name: 'user', label: type === 'mongodb' ? 'User (optional)' : 'User', kind: 'text', mono: true, apiPath: 'connection.user', showIf: byParts, half: true },
    {
      name: 'password',
      label: 'Password',
      kind: 'password',
      apiPath: 'connection.password',
      showIf: byParts,
      hint: 'Write-only: stored encrypted, never shown again.',
      half: true,
    },
    {
      name: 'ssl',
      label: 'TLS',
      kind: 'select',
      apiPath: 'connection.ssl',
      showIf: byParts,
      half: true,
      options: [
        { value: '', label: 'Default (no TLS)' },
        { value: 'require', label: 'Require (encrypted)' },
        { value: 'verify-full', label: 'Verify certificate and host' },
        { value: 'disable', label: 'Disable' },
      ],
    },
    ...(type === 'mongodb'
      ? [{ name: 'authSource', label: 'Auth database (optional)', kind: 'text' as const, mono: true, apiPath: 'connection.authSource', showIf: byParts, placeholder: 'admin' }]
      : []),
  ];
}

function sqlSpec(type: 'postgres' | 'mysql'): TypeSpec {
  return {
    label: type === 'postgres' ? 'PostgreSQL' : 'MySQL / MariaDB',
    description: type === 'postgres' ? 'A table or a SELECT from a Postgres database.' : 'A table or a SELECT from MySQL or MariaDB.',
    icon: type === 'postgres' ? 'PG' : 'SQL',
    fields: [
      ...connectionFields(type, type === 'postgres' ? '5432' : '3306'),
      {
        name: 'readWith',
        label: 'Read',
        kind: 'select',
        options: [
          { value: 'table', label: 'A whole table or view' },
          { value: 'query', label: 'The rows of a SELECT query' },
        ],
      },
      {
        name: 'table',
        label: 'Table',
        kind: 'text',
        mono: true,
        showIf: (v) => (v.readWith ?? 'table') === 'table',
        placeholder: type === 'postgres' ? 'public.orders' : 'orders',
      },
      {
        name: 'query',
        label: 'SELECT query',
        kind: 'textarea',
        mono: true,
        rows: 5,
        showIf: (v) => v.readWith === 'query',
        placeholder: 'SELECT id, amount, created_at FROM orders WHERE amount > 0',
        hint: 'Runs in a read-only transaction; its rows are streamed in.',
      },
      ...syncSettingFields(true),
    ],
    toBody: (v) => ({
      connection: connectionOf(v, type),
      ...((v.readWith ?? 'table') === 'table' ? { table: text(v, 'table', 'table name') } : { query: text(v, 'query', 'SELECT query') }),
      ...createSettingsOf(v, true),
    }),
  };
}

function headersOf(raw: string): Record<string, string> | undefined {
  const lines = raw
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  if (lines.length === 0) return undefined;
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const i = line.indexOf(':');
    if (i <= 0) throw new LocalProblem('headers', `"${line.slice(0, 40)}" is not a header; write one "Name: value" per line`);
    headers[line.slice(0, i).trim()] = line.slice(i + 1).trim();
  }
  return headers;
}

/** The sources whose data lives elsewhere (they can sync on a schedule) and those that can sync incrementally. */
export const REMOTE_TYPES: ReadonlySet<string> = new Set(['url', 'postgres', 'mysql', 'mongodb']);
export const DATABASE_TYPES: ReadonlySet<string> = new Set(['postgres', 'mysql', 'mongodb']);

export const SCHEMA_POLICY_OPTIONS = [
  { value: 'evolve', label: 'Evolve: take the new columns' },
  { value: 'freeze', label: 'Freeze: fail the sync, keep the data' },
  { value: 'quarantine', label: 'Quarantine: load the rows that fit, set the rest aside' },
] as const;

const browserZone = () => Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';

/** Schedule, schema policy and (databases) incremental settings: the same fields on every remote type's form. */
export function syncSettingFields(database: boolean): FieldSpec[] {
  return [
    {
      name: 'scheduleKind',
      label: 'Sync by itself',
      kind: 'select',
      options: [
        { value: 'none', label: 'No: only when asked' },
        { value: 'every', label: 'Every …' },
        { value: 'cron', label: 'On a cron schedule' },
      ],
    },
    {
      name: 'every',
      label: 'Interval',
      kind: 'text',
      mono: true,
      placeholder: '15m',
      hint: 'A number and a unit: s, m, h or d; at least 1m.',
      showIf: (v) => v.scheduleKind === 'every',
      apiPath: 'schedule.every',
    },
    { name: 'cron', label: 'Cron expression', kind: 'text', mono: true, placeholder: '0 6 * * *', showIf: (v) => v.scheduleKind === 'cron', apiPath: 'schedule.cron', half: true },
    {
      name: 'timezone',
      label: 'Time zone',
      kind: 'text',
      placeholder: browserZone(),
      hint: 'An IANA zone; empty is UTC.',
      showIf: (v) => v.scheduleKind === 'cron',
      apiPath: 'schedule.timezone',
    },
    { name: 'schemaPolicy', label: 'When the columns change', kind: 'select', options: SCHEMA_POLICY_OPTIONS, apiPath: 'schemaPolicy' },
    ...(database
      ? [
          {
            name: 'cursorField',
            label: 'Incremental cursor column (optional)',
            kind: 'text' as const,
            mono: true,
            placeholder: 'updated_at',
            hint: 'A column that grows when a row is added or changed: each sync then pulls only rows at or past the last value.',
            apiPath: 'incremental.cursorField',
            half: true,
          },
          {
            name: 'primaryKey',
            label: 'Primary key (optional)',
            kind: 'text' as const,
            mono: true,
            placeholder: 'id',
            hint: 'Comma-separated columns; pulled rows replace the row with the same key. Without it they are appended.',
            showIf: (v: Record<string, string>) => Boolean(v.cursorField?.trim()),
            apiPath: 'incremental.primaryKey',
          },
        ]
      : []),
  ];
}

export interface SyncSettings {
  schedule: { every: string } | { cron: string; timezone?: string } | null;
  schemaPolicy: 'evolve' | 'freeze' | 'quarantine';
  incremental: { cursorField: string; primaryKey?: string[] } | null;
}

/** The settings the fields describe; a local mistake is a LocalProblem on its field's API path. */
export function syncSettingsOf(v: Record<string, string>, database: boolean): SyncSettings {
  const kind = v.scheduleKind ?? 'none';
  const schedule =
    kind === 'every'
      ? { every: text(v, 'every', 'interval').trim() }
      : kind === 'cron'
        ? { cron: text(v, 'cron', 'cron expression').trim(), ...(optional(v, 'timezone') ? { timezone: optional(v, 'timezone')! } : {}) }
        : null;
  const cursorField = database ? optional(v, 'cursorField') : undefined;
  const primaryKey = (v.primaryKey ?? '')
    .split(',')
    .map((k) => k.trim())
    .filter(Boolean);
  return {
    schedule,
    schemaPolicy: (optional(v, 'schemaPolicy') ?? 'evolve') as SyncSettings['schemaPolicy'],
    incremental: cursorField ? { cursorField, ...(primaryKey.length ? { primaryKey } : {}) } : null,
  };
}

/** The settings as a new source's body takes them (no nulls; the defaults left out). */
function createSettingsOf(v: Record<string, string>, database: boolean): Record<string, unknown> {
  const s = syncSettingsOf(v, database);
  return {
    ...(s.schedule ? { schedule: s.schedule } : {}),
    ...(s.schemaPolicy !== 'evolve' ? { schemaPolicy: s.schemaPolicy } : {}),
    ...(s.incremental ? { incremental: s.incremental } : {}),
  };
}

/** One entry per source type the API accepts: the type check fails until a new type gets its form. */
const SPECS: Record<SourceType, TypeSpec> = {
  inline: {
    label: 'Paste rows',
    description: 'A JSON array of objects, typed in or pasted.',
    icon: '{ }',
    fields: [
      {
        name: 'rows',
        label: 'Rows (JSON array of objects)',
        kind: 'textarea',
        mono: true,
        required: true,
        hint: 'Up to 10,000 rows. Field types are detected: numbers, booleans, ISO times and text.',
      },
    ],
    example: { rows: EXAMPLE_ROWS },
    toBody: (v) => {
      let rows: unknown;
      try {
        rows = JSON.parse(text(v, 'rows', 'rows'));
      } catch (err) {
        if (err instanceof LocalProblem) throw err;
        throw new LocalProblem('rows', `This is not valid JSON: ${(err as Error).message}`);
      }
      if (!Array.isArray(rows)) throw new LocalProblem('rows', 'Rows must be a JSON array of objects, like [{"a": 1}]');
      return { rows };
    },
  },
  csv: {
    label: 'CSV file',
    description: 'Comma-separated values with a header row.',
    icon: 'CSV',
    fields: [
      {
        name: 'csv',
        label: 'CSV',
        kind: 'textarea',
        mono: true,
        required: true,
        accept: '.csv,text/csv',
        hint: 'Upload a file (up to 2 GB) or paste the text; the first row names the columns.',
      },
    ],
    example: { csv: 'region,units,price\nnorth,3,9.5\nsouth,7,12\nwest,2,8.25\n' },
    toBody: (v) => ({ csv: text(v, 'csv', 'CSV text') }),
  },
  json: {
    label: 'JSON file',
    description: 'A JSON array of objects.',
    icon: 'JSON',
    fields: [
      {
        name: 'json',
        label: 'JSON',
        kind: 'textarea',
        mono: true,
        required: true,
        accept: '.json,application/json',
        hint: 'Upload a file (up to 2 GB) or paste an array of objects.',
      },
    ],
    example: { json: '[\n  {"sku": "A-1", "stock": 12},\n  {"sku": "B-7", "stock": 0}\n]' },
    toBody: (v) => ({ json: text(v, 'json', 'JSON text') }),
  },
  ndjson: {
    label: 'NDJSON file',
    description: 'One JSON object per line (JSON Lines).',
    icon: 'NDJ',
    fields: [
      {
        name: 'ndjson',
        label: 'NDJSON',
        kind: 'textarea',
        mono: true,
        required: true,
        accept: '.ndjson,.jsonl,application/x-ndjson',
        hint: 'Upload a file (up to 2 GB) or paste one object per line.',
      },
    ],
    example: { ndjson: '{"event": "signup", "ms": 120}\n{"event": "login", "ms": 80}\n' },
    toBody: (v) => ({ ndjson: text(v, 'ndjson', 'NDJSON text') }),
  },
  url: {
    label: 'File URL',
    description: 'A CSV, JSON or NDJSON file fetched over HTTPS on every sync.',
    icon: 'URL',
    fields: [
      {
        name: 'url',
        label: 'File URL',
        kind: 'text',
        mono: true,
        required: true,
        placeholder: 'https://example.com/exports/orders.csv',
        hint: 'Redirects are not followed. Put tokens in a header rather than the URL.',
      },
      {
        name: 'format',
        label: 'Format',
        kind: 'select',
        options: [
          { value: '', label: 'Detect (Content-Type, then extension)' },
          { value: 'csv', label: 'CSV' },
          { value: 'json', label: 'JSON' },
          { value: 'ndjson', label: 'NDJSON' },
        ],
      },
      {
        name: 'headers',
        label: 'Request headers (optional)',
        kind: 'textarea',
        mono: true,
        rows: 3,
        placeholder: 'Authorization: Bearer …',
        hint: 'One "Name: value" per line. Values are stored encrypted; only the names are shown.',
      },
      ...syncSettingFields(false),
    ],
    toBody: (v) => {
      const headers = headersOf(v.headers ?? '');
      return {
        url: text(v, 'url', 'file URL').trim(),
        ...(optional(v, 'format') ? { format: optional(v, 'format') } : {}),
        ...(headers ? { headers } : {}),
        ...createSettingsOf(v, false),
      };
    },
  },
  postgres: sqlSpec('postgres'),
  mysql: sqlSpec('mysql'),
  mongodb: {
    label: 'MongoDB',
    description: 'The documents of a collection, optionally filtered.',
    icon: 'MDB',
    fields: [
      ...connectionFields('mongodb', '27017'),
      { name: 'collection', label: 'Collection', kind: 'text', mono: true, required: true, placeholder: 'events' },
      {
        name: 'filter',
        label: 'Filter (optional)',
        kind: 'textarea',
        mono: true,
        rows: 3,
        placeholder: '{"kind": "click"}',
        hint: 'A query document as JSON; comparison and logical operators only.',
      },
      ...syncSettingFields(true),
    ],
    toBody: (v) => {
      const filter = optional(v, 'filter');
      if (filter) {
        try {
          JSON.parse(filter);
        } catch (err) {
          throw new LocalProblem('filter', `This is not valid JSON: ${(err as Error).message}`);
        }
      }
      return {
        connection: connectionOf(v, 'mongodb'),
        collection: text(v, 'collection', 'collection name').trim(),
        ...(filter ? { filter } : {}),
        ...createSettingsOf(v, true),
      };
    },
  },
};

export const SOURCE_TYPE_LABELS: Record<string, string> = Object.fromEntries(Object.entries(SPECS).map(([k, s]) => [k, s.label]));
const TYPES = Object.keys(SPECS) as SourceType[];

/** Picked files go to the streamed upload route; its limit (UPLOAD_LIMIT_BYTES) is the API's to enforce. */
const FILE_FORMAT_TYPES = new Set<SourceType>(['csv', 'json', 'ndjson']);

const formatBytes = (n: number) =>
  n >= 1024 ** 3 ? `${(n / 1024 ** 3).toFixed(1)} GB` : n >= 1024 ** 2 ? `${(n / 1024 ** 2).toFixed(1)} MB` : `${Math.max(1, Math.round(n / 1024))} KB`;

/** Consecutive half-width fields share a row. */
function groupHalves(fields: FieldSpec[]): FieldSpec[][] {
  const groups: FieldSpec[][] = [];
  for (const f of fields) {
    const last = groups[groups.length - 1];
    if (f.half && last && last[0]!.half && last.length < 2) last.push(f);
    else groups.push([f]);
  }
  return groups;
}

export function ConnectSourcePage() {
  useDocumentTitle('Connect a source');
  const api = useApi();
  const notify = useNotify();
  const [type, setType] = useState<SourceType>('inline');
  const [name, setName] = useState('');
  const [values, setValues] = useState<Record<string, string>>({});
  const [files, setFiles] = useState<Record<string, File | null>>({});
  const [pickerKey, setPickerKey] = useState(0);
  // A picked file goes as a multipart form to the upload operation (the browser streams it and sets the boundary).
  const create = useAction((body: RequestBodyOf<'/sources'> | FormData) =>
    body instanceof FormData ? unwrap(api.openapi.POST('/sources/upload', { body: body as never })) : unwrap(api.openapi.POST('/sources', { body })),
  );
  const spec = SPECS[type];
  const err = create.error;

  /** A field edited: its error goes once the form's own check of the new values passes (the API stays the judge). */
  const set = (n: string, v: string) => {
    const next = { ...values, [n]: v };
    setValues(next);
    const f = spec.fields.find((x) => x.name === n);
    const path = f?.apiPath ?? n;
    if (!err?.fieldError(path) && !err?.fieldError(n)) return;
    let stillWrong: string | undefined;
    try {
      spec.toBody(next);
    } catch (problem) {
      if (problem instanceof LocalProblem && (problem.path === path || problem.path === n)) stillWrong = problem.message;
    }
    create.fixField(path, stillWrong);
    if (path !== n) create.fixField(n, stillWrong);
  };

  const onFile = (field: string) => (e: ChangeEvent<HTMLInputElement>) => {
    const file = e.target.files?.[0] ?? null;
    setFiles((old) => ({ ...old, [field]: file }));
    create.setError(null);
    if (file && !name.trim()) setName(file.name.replace(/\.[^.]+$/, ''));
  };

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    let body: Record<string, unknown> | FormData;
    try {
      if (!name.trim()) throw new LocalProblem('name', 'Name the source');
      const picked = FILE_FORMAT_TYPES.has(type) ? spec.fields.map((f) => files[f.name]).find((f) => f) : undefined;
      if (picked) {
        // The file itself, streamed by the browser as a multipart form: no size limit of the JSON body, no copy in memory.
        body = new FormData();
        body.append('name', name.trim());
        body.append('format', type);
        body.append('file', picked, picked.name);
      } else {
        body = { type, name: name.trim(), ...spec.toBody(values) };
      }
    } catch (problem) {
      if (problem instanceof LocalProblem) {
        create.setError(
          new ApiError({ status: 400, code: 'validation_failed', title: 'Check the highlighted fields', detail: '', errors: [{ path: problem.path, message: problem.message }] }),
        );
        return;
      }
      throw problem;
    }
    // Built from what the user entered: the server checks it, and its 400 names the fields to highlight.
    const source = await create.run(body instanceof FormData ? body : (body as RequestBodyOf<'/sources'>));
    if (source) {
      notify(`Source “${source.name}” connected; syncing now`, 'info');
      navigate(`/sources/${source.id}`);
    }
  };

  const visible = spec.fields.filter((f) => !f.showIf || f.showIf(values));
  const pathOf = (f: FieldSpec) => f.apiPath ?? f.name;
  // An uploaded file's problems are reported on `file` (or `format`): shown at the field that picked it.
  const fieldErrorOf = (f: FieldSpec) =>
    err?.fieldError(pathOf(f)) ??
    (f.apiPath ? err?.fieldError(f.name) : undefined) ??
    (f.accept && files[f.name] ? (err?.fieldError('file') ?? err?.fieldError('format')) : undefined);
  const shownPaths = ['name', ...visible.map(pathOf), ...(visible.some((f) => f.accept && files[f.name]) ? ['file', 'format'] : [])];
  const unshown = err && !err.fieldErrors.some((fe) => shownPaths.some((p) => fe.path === p || fe.path.startsWith(`${p}.`)));

  const renderField = (f: FieldSpec) => (
    <Field key={`${type}:${f.name}`} label={f.label} hint={f.hint} error={fieldErrorOf(f)} required={f.required}>
      {(p) =>
        f.kind === 'textarea' ? (
          <>
            {f.accept && (
              <div className="file-row">
                <input key={pickerKey} type="file" accept={f.accept} onChange={onFile(f.name)} aria-label={`Upload a ${f.label} file`} className="file-input" />
              </div>
            )}
            {f.accept && files[f.name] ? (
              <p className="field-hint" data-testid="picked-file">
                {files[f.name]!.name} ({formatBytes(files[f.name]!.size)}) is uploaded as it is when you connect the source.{' '}
                <Button
                  size="sm"
                  variant="ghost"
                  onClick={() => {
                    setFiles((old) => ({ ...old, [f.name]: null }));
                    setPickerKey((k) => k + 1);
                  }}
                >
                  Paste text instead
                </Button>
              </p>
            ) : (
              <textarea
                {...p}
                className={`input textarea${f.mono ? ' mono' : ''}`}
                rows={f.rows ?? 10}
                spellCheck={false}
                value={values[f.name] ?? ''}
                placeholder={f.placeholder}
                onChange={(e) => set(f.name, e.target.value)}
              />
            )}
          </>
        ) : f.kind === 'select' ? (
          <select {...p} className="input" value={values[f.name] ?? f.options?.[0]?.value ?? ''} onChange={(e) => set(f.name, e.target.value)}>
            {f.options?.map((o) => (
              <option key={o.value} value={o.value}>
                {o.label}
              </option>
            ))}
          </select>
        ) : (
          <input
            {...p}
            className={`input${f.mono ? ' mono' : ''}`}
            type={f.kind === 'number' ? 'text' : f.kind}
            inputMode={f.kind === 'number' ? 'numeric' : undefined}
            autoComplete={f.kind === 'password' ? 'new-password' : 'off'}
            spellCheck={false}
            value={values[f.name] ?? ''}
            placeholder={f.placeholder}
            onChange={(e) => set(f.name, e.target.value)}
          />
        )
      }
    </Field>
  );

  return (
    <>
      <PageHeader
        title="Connect a source"
        back={{ to: '/sources', label: 'Sources' }}
        description="Choose where the data comes from. It is read in the background; you can explore it as soon as it is ready."
      />
      <form className="form" onSubmit={submit} noValidate>
        <Card title="1. Source type">
          <fieldset className="fieldset">
            <legend className="visually-hidden">Source type</legend>
            <div className="type-grid">
              {TYPES.map((t) => (
                <label key={t} className={`type-card${type === t ? ' is-checked' : ''}`}>
                  <input
                    type="radio"
                    name="source-type"
                    value={t}
                    checked={type === t}
                    onChange={() => {
                      setType(t);
                      create.setError(null);
                    }}
                  />
                  <span className="type-icon" aria-hidden="true">
                    {SPECS[t].icon}
                  </span>
                  <span className="type-text">
                    <span className="radio-title">{SPECS[t].label}</span>
                    <span className="radio-desc">{SPECS[t].description}</span>
                  </span>
                </label>
              ))}
            </div>
          </fieldset>
        </Card>
        <Card
          title="2. Details"
          actions={
            spec.example && (
              <Button size="sm" variant="ghost" onClick={() => setValues((old) => ({ ...old, ...spec.example }))}>
                Fill in an example
              </Button>
            )
          }
        >
          <ErrorBanner error={unshown ? err : null} />
          <Field label="Name" hint="How the source appears in the dashboard and the API." error={err?.fieldError('name')} required>
            {(p) => (
              <input
                {...p}
                className="input"
                value={name}
                maxLength={200}
                onChange={(e) => {
                  setName(e.target.value);
                  create.fixField('name', e.target.value.trim() ? undefined : 'Name the source');
                }}
                placeholder="e.g. Orders 2025"
              />
            )}
          </Field>
          {groupHalves(visible).map((group) =>
            group.length === 1 ? (
              renderField(group[0]!)
            ) : (
              <div key={group.map((f) => f.name).join('+')} className="form-row">
                {group.map(renderField)}
              </div>
            ),
          )}
          <div className="form-actions">
            <ButtonLink to="/sources">Cancel</ButtonLink>
            <Button type="submit" variant="primary" loading={create.pending}>
              Connect source
            </Button>
          </div>
        </Card>
      </form>
    </>
  );
}
