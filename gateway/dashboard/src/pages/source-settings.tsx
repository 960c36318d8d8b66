import { useState, type FormEvent, type ReactNode } from 'react';
import { ApiError, unwrap } from '../api/client.ts';
import type { SourceDto } from '../api/types.ts';
import { Badge, Button, Card, ErrorBanner, Field, KeyValue } from '../components/ui.tsx';
import { useApi, useNotify } from '../context.tsx';
import { formatDate, formatInt } from '../format.ts';
import { useAction } from '../hooks.ts';
import { DATABASE_TYPES, REMOTE_TYPES, SCHEMA_POLICY_OPTIONS, syncSettingFields, syncSettingsOf, type SyncSettings } from './connect-source.tsx';

/** The form's values for the source's current settings. */
function valuesOf(s: SourceDto): Record<string, string> {
  const sch = s.schedule as { every?: string; cron?: string; timezone?: string } | null;
  return {
    scheduleKind: sch?.every ? 'every' : sch?.cron ? 'cron' : 'none',
    every: sch?.every ?? '',
    cron: sch?.cron ?? '',
    timezone: sch?.timezone ?? '',
    schemaPolicy: s.schemaPolicy,
    cursorField: s.incremental?.cursorField ?? '',
    primaryKey: (s.incremental?.primaryKey ?? []).join(', '),
  };
}

function describeSchedule(s: SourceDto): string {
  const sch = s.schedule as { every?: string; cron?: string; timezone?: string } | null;
  if (!sch) return 'Only when asked';
  if (sch.every) return `Every ${sch.every}`;
  return `Cron ${sch.cron} (${sch.timezone ?? 'UTC'})`;
}

/** The settings as read: schedule and next run, schema policy and set-aside rows, incremental state, last sync. */
function summaryOf(s: SourceDto): [string, ReactNode][] {
  const items: [string, ReactNode][] = [];
  if (REMOTE_TYPES.has(s.type)) items.push(['Schedule', <span data-testid="schedule">{describeSchedule(s)}</span>]);
  if (s.schedule) items.push(['Next sync', <span data-testid="next-sync">{formatDate(s.nextSyncAt)}</span>]);
  items.push(['When the columns change', <span data-testid="schema-policy">{SCHEMA_POLICY_OPTIONS.find((o) => o.value === s.schemaPolicy)?.label ?? s.schemaPolicy}</span>]);
  if (s.quarantine) {
    items.push([
      'Set aside',
      <span>
        {formatInt(s.quarantine.rowCount)} {s.quarantine.rowCount === 1 ? 'row' : 'rows'} ({formatDate(s.quarantine.at)}){' '}
        <a className="btn btn-sm btn-secondary" href={`/v1/sources/${encodeURIComponent(s.id)}/quarantine`} download data-testid="quarantine-link">
          Download CSV
        </a>
      </span>,
    ]);
  }
  if (DATABASE_TYPES.has(s.type)) {
    const inc = s.incremental;
    items.push([
      'Incremental',
      <span data-testid="incremental">
        {inc ? (
          <>
            by <code>{inc.cursorField}</code>
            {inc.primaryKey ? (
              <>
                , merged on <code>{inc.primaryKey.join(', ')}</code>
              </>
            ) : (
              ', appended'
            )}
          </>
        ) : (
          'No: every sync pulls everything'
        )}
      </span>,
    ]);
    if (inc?.cursor) items.push(['Last cursor value', <code data-testid="cursor">{inc.cursor}</code>]);
  }
  const last = s.lastSync;
  if (last?.mode) {
    items.push([
      'Last sync',
      <span data-testid="last-sync-report">
        <Badge tone={last.mode === 'incremental' ? 'accent' : 'neutral'}>{last.mode}</Badge> {formatInt(last.rowsPulled ?? 0)} rows pulled, {formatInt(last.rowsMerged ?? 0)}{' '}
        written
      </span>,
    ]);
  }
  return items;
}

const same = (a: unknown, b: unknown) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);

/**
 * How the source syncs: its schedule with the next run, its schema policy with the rows a quarantining sync
 * set aside, and (databases) its incremental settings; editable in place. Only what changed is sent, since new
 * incremental settings restart the cursor.
 */
export function SyncSettingsCard({ source: s, onSaved }: { source: SourceDto; onSaved: (s: SourceDto) => void }) {
  const api = useApi();
  const notify = useNotify();
  const remote = REMOTE_TYPES.has(s.type);
  const database = DATABASE_TYPES.has(s.type);
  const [editing, setEditing] = useState(false);
  const [values, setValues] = useState<Record<string, string>>(() => valuesOf(s));
  const save = useAction(async (body: Record<string, unknown>) => unwrap(api.openapi.PATCH('/sources/{id}', { params: { path: { id: s.id } }, body: body as never })));
  const err = save.error;

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    let next: SyncSettings;
    try {
      next = syncSettingsOf(values, database);
    } catch (problem) {
      const p = problem as { path?: string; message: string };
      save.setError(
        new ApiError({ status: 400, code: 'validation_failed', title: 'Check the highlighted fields', detail: '', errors: [{ path: p.path ?? '', message: p.message }] }),
      );
      return;
    }
    const current = { cursorField: s.incremental?.cursorField, ...(s.incremental?.primaryKey ? { primaryKey: s.incremental.primaryKey } : {}) };
    const body = {
      ...(remote && !same(next.schedule, s.schedule) ? { schedule: next.schedule } : {}),
      ...(next.schemaPolicy !== s.schemaPolicy ? { schemaPolicy: next.schemaPolicy } : {}),
      ...(database && !same(next.incremental, s.incremental ? current : null) ? { incremental: next.incremental } : {}),
    };
    if (Object.keys(body).length === 0) return setEditing(false);
    const saved = await save.run(body);
    if (saved) {
      notify('Sync settings saved');
      setEditing(false);
      onSaved(saved);
    }
  };

  const fields = syncSettingFields(database).filter((f) => (remote || !f.apiPath?.startsWith('schedule')) && (!f.showIf || f.showIf(values)));
  return (
    <Card
      title="Sync settings"
      actions={
        !editing && (
          <Button
            size="sm"
            onClick={() => {
              setValues(valuesOf(s));
              save.setError(null);
              setEditing(true);
            }}
          >
            Edit
          </Button>
        )
      }
    >
      {!editing ? (
        <KeyValue items={summaryOf(s)} />
      ) : (
        <form onSubmit={(e) => void submit(e)} noValidate aria-label="Sync settings">
          {fields.map((f) => (
            <Field key={f.name} label={f.label} hint={f.hint} error={err?.fieldError(f.apiPath ?? f.name)}>
              {(p) =>
                f.kind === 'select' ? (
                  <select {...p} className="input" value={values[f.name] ?? f.options?.[0]?.value ?? ''} onChange={(e) => setValues({ ...values, [f.name]: e.target.value })}>
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
                    placeholder={f.placeholder}
                    value={values[f.name] ?? ''}
                    onChange={(e) => {
                      setValues({ ...values, [f.name]: e.target.value });
                      save.fixField(f.apiPath ?? f.name);
                    }}
                  />
                )
              }
            </Field>
          ))}
          {database && s.incremental && <p className="field-hint">Changing the incremental settings makes the next sync pull everything.</p>}
          <ErrorBanner error={err && !fields.some((f) => err.fieldError(f.apiPath ?? f.name)) ? err : null} />
          <div className="form-actions">
            <Button type="submit" variant="primary" loading={save.pending}>
              Save
            </Button>
            <Button onClick={() => setEditing(false)}>Cancel</Button>
          </div>
        </form>
      )}
    </Card>
  );
}
