import { Fragment, useState, type FormEvent } from 'react';
import { ApiError, unwrap, type RequestBodyOf } from '../api/client.ts';
import {
  EVENT_TYPES,
  type DeliveryDto,
  type Page,
  type PublicEventType,
  type UpdateWebhookBody,
  type WebhookCreated,
  type WebhookDto,
  type WebhookSecretRotated,
} from '../api/types.ts';
import {
  Alert,
  Badge,
  Button,
  ButtonLink,
  Card,
  ConfirmDialog,
  Dialog,
  EmptyState,
  ErrorBanner,
  Field,
  KeyValue,
  Loading,
  PageHeader,
  SecretReveal,
  StatusBadge,
} from '../components/ui.tsx';
import { useApi, useNotify } from '../context.tsx';
import { formatDate, formatMs, formatPercent, formatRelative, plural } from '../format.ts';
import { useAction, useDocumentTitle, useInterval, useResource } from '../hooks.ts';
import { Link, navigate } from '../router.tsx';

const FAMILIES = [...new Set(EVENT_TYPES.map((t) => t.split('.')[0]!))];

function EventPicker({ value, onChange, error }: { value: string[]; onChange: (v: string[]) => void; error?: string | undefined }) {
  const all = value.includes('*');
  const has = (f: string) => value.includes(f);
  const toggle = (f: string) => onChange(has(f) ? value.filter((x) => x !== f) : [...value.filter((x) => x !== '*'), f]);
  return (
    <fieldset className={`fieldset${error ? ' field-invalid' : ''}`}>
      <legend className="field-label">Events</legend>
      <div className="radio-cards">
        <label className={`radio-card${all ? ' is-checked' : ''}`}>
          <input type="radio" name="events-mode" checked={all} onChange={() => onChange(['*'])} />
          <span>
            <span className="radio-title">All events</span>
            <span className="radio-desc">Including event types added later.</span>
          </span>
        </label>
        <label className={`radio-card${!all ? ' is-checked' : ''}`}>
          <input type="radio" name="events-mode" checked={!all} onChange={() => onChange([])} />
          <span>
            <span className="radio-title">Selected events</span>
            <span className="radio-desc">Only the types you pick.</span>
          </span>
        </label>
      </div>
      {!all && (
        <div className="event-families">
          {FAMILIES.map((fam) => {
            const wildcard = `${fam}.*`;
            const types = EVENT_TYPES.filter((t) => t.startsWith(`${fam}.`));
            return (
              <div key={fam} className="event-family">
                <label className="check">
                  <input
                    type="checkbox"
                    checked={has(wildcard)}
                    onChange={() => onChange(has(wildcard) ? value.filter((x) => x !== wildcard) : [...value.filter((x) => !x.startsWith(`${fam}.`)), wildcard])}
                  />
                  <code>{wildcard}</code>
                </label>
                {types.length > 1 &&
                  types.map((t) => (
                    <label key={t} className="check check-nested">
                      <input type="checkbox" checked={has(wildcard) || has(t)} disabled={has(wildcard)} onChange={() => toggle(t)} />
                      <code>{t}</code>
                    </label>
                  ))}
              </div>
            );
          })}
        </div>
      )}
      {error && <p className="field-error">⚠ {error}</p>}
    </fieldset>
  );
}

const urlProblem = (v: string) => (!/^https?:\/\/\S+$/i.test(v.trim()) ? 'Enter an http(s) URL, like https://example.com/hooks' : undefined);

interface EndpointForm {
  url: string;
  events: string[];
  description: string;
}

/** The form's own checks, as field errors shaped like the API's (so both show the same way). */
function checkEndpointForm(f: EndpointForm): ApiError | null {
  const local: { path: string; message: string }[] = [];
  const badUrl = urlProblem(f.url);
  if (badUrl) local.push({ path: 'url', message: badUrl });
  if (f.events.length === 0) local.push({ path: 'events', message: 'Pick at least one event' });
  return local.length ? new ApiError({ status: 400, code: 'validation_failed', title: 'Check the highlighted fields', detail: '', errors: local }) : null;
}

/** URL, events and description: the fields adding and editing an endpoint share. */
function EndpointFields({
  value,
  onChange,
  action,
}: {
  value: EndpointForm;
  onChange: (v: EndpointForm) => void;
  action: { error: ApiError | null; fixField: (path: string, stillWrong?: string | null) => void };
}) {
  const err = action.error;
  return (
    <>
      <ErrorBanner error={err && err.fieldErrors.length === 0 ? err : null} />
      <Field label="Endpoint URL" error={err?.fieldError('url')} required>
        {(p) => (
          <input
            {...p}
            className="input mono"
            type="url"
            inputMode="url"
            placeholder="https://example.com/webhooks"
            value={value.url}
            onChange={(e) => {
              onChange({ ...value, url: e.target.value });
              action.fixField('url', urlProblem(e.target.value));
            }}
            autoFocus
          />
        )}
      </Field>
      <EventPicker
        value={value.events}
        onChange={(v) => {
          onChange({ ...value, events: v });
          action.fixField('events', v.length === 0 ? 'Pick at least one event' : undefined);
        }}
        error={err?.fieldError('events')}
      />
      <Field label="Description" hint="Optional, for your team." error={err?.fieldError('description')}>
        {(p) => (
          <input
            {...p}
            className="input"
            maxLength={500}
            value={value.description}
            onChange={(e) => {
              onChange({ ...value, description: e.target.value });
              action.fixField('description');
            }}
          />
        )}
      </Field>
    </>
  );
}

const EMPTY_FORM: EndpointForm = { url: '', events: ['*'], description: '' };

function CreateWebhookDialog({ open, onClose, onCreated }: { open: boolean; onClose: () => void; onCreated: (w: WebhookCreated) => void }) {
  const api = useApi();
  const [form, setForm] = useState<EndpointForm>(EMPTY_FORM);
  const [created, setCreated] = useState<WebhookCreated | null>(null);
  const create = useAction((body: RequestBodyOf<'/webhooks'>) => unwrap(api.openapi.POST('/webhooks', { body })));
  const close = () => {
    setForm(EMPTY_FORM);
    setCreated(null);
    create.setError(null);
    onClose();
  };
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const local = checkEndpointForm(form);
    if (local) return create.setError(local);
    const w = await create.run({ url: form.url.trim(), events: form.events, description: form.description.trim() });
    if (w) {
      setCreated(w);
      onCreated(w);
    }
  };
  if (created) {
    return (
      <Dialog open={open} onClose={close} title="Endpoint added" dismissible={false}>
        <SecretReveal
          label="Signing secret"
          secret={created.secret}
          warning="Use it to verify the webhook-signature header of every delivery (Standard Webhooks). It is shown only now; you can rotate it later."
        />
        <div className="dialog-footer">
          <Button
            variant="primary"
            onClick={() => {
              const id = created.id;
              close();
              navigate(`/webhooks/${id}`);
            }}
          >
            I have saved it
          </Button>
        </div>
      </Dialog>
    );
  }
  return (
    <Dialog
      open={open}
      onClose={close}
      title="Add a webhook endpoint"
      description="We POST signed JSON to this URL when events happen, retrying with backoff until it answers 2xx."
      wide
    >
      <form className="form" onSubmit={submit} noValidate>
        <EndpointFields value={form} onChange={setForm} action={create} />
        <div className="dialog-footer">
          <Button onClick={close}>Cancel</Button>
          <Button type="submit" variant="primary" loading={create.pending}>
            Add endpoint
          </Button>
        </div>
      </form>
    </Dialog>
  );
}

/** Edits an endpoint's URL, events and description; the API checks a new URL as it does at registration. */
function EditWebhookDialog({ webhook, open, onClose, onSaved }: { webhook: WebhookDto; open: boolean; onClose: () => void; onSaved: (w: WebhookDto) => void }) {
  const api = useApi();
  const notify = useNotify();
  const initial = (): EndpointForm => ({ url: webhook.url, events: webhook.events, description: webhook.description });
  const [form, setForm] = useState<EndpointForm>(initial);
  const save = useAction((body: UpdateWebhookBody) => unwrap(api.openapi.PATCH('/webhooks/{id}', { params: { path: { id: webhook.id } }, body })));
  const close = () => {
    save.setError(null);
    onClose();
  };
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const local = checkEndpointForm(form);
    if (local) return save.setError(local);
    // Only what changed is sent, so a concurrent edit of another setting is not overwritten.
    const body: UpdateWebhookBody = {};
    if (form.url.trim() !== webhook.url) body.url = form.url.trim();
    if (form.events.join() !== webhook.events.join()) body.events = form.events;
    if (form.description.trim() !== webhook.description) body.description = form.description.trim();
    if (Object.keys(body).length === 0) return close();
    const w = await save.run(body);
    if (w) {
      notify('Endpoint updated');
      onSaved(w);
      close();
    }
  };
  return (
    <Dialog open={open} onClose={close} title="Edit endpoint" description="Messages not yet sent go to the new URL." wide>
      {open && (
        <form className="form" onSubmit={submit} noValidate>
          <EndpointFields value={form} onChange={setForm} action={save} />
          <div className="dialog-footer">
            <Button onClick={close}>Cancel</Button>
            <Button type="submit" variant="primary" loading={save.pending}>
              Save changes
            </Button>
          </div>
        </form>
      )}
    </Dialog>
  );
}

function EventList({ events }: { events: string[] }) {
  if (events.includes('*')) return <Badge tone="accent">All events</Badge>;
  return (
    <span className="badge-list">
      {events.map((e) => (
        <Badge key={e}>{e}</Badge>
      ))}
    </span>
  );
}

/** Enabled, but its latest attempts fail: a warning in place of the plain green "Enabled". */
function EndpointStatus({ webhook }: { webhook: WebhookDto }) {
  if (webhook.status === 'enabled' && webhook.health.failingSince) {
    return (
      <span className="badge badge-warning" data-status="failing" title={`Failing since ${formatDate(webhook.health.failingSince)}`}>
        <span aria-hidden="true">⚠</span> Failing
      </span>
    );
  }
  return <StatusBadge status={webhook.status} />;
}

/** The success rate of the last 24 h and the last failure in it. */
function EndpointHealth({ webhook }: { webhook: WebhookDto }) {
  const { attempts24h, succeeded24h, lastFailureAt } = webhook.health;
  if (attempts24h === 0) return <span className="muted small">No attempts in 24 h</span>;
  return (
    <div data-testid="endpoint-health">
      <strong>{formatPercent(succeeded24h / attempts24h)}</strong> <span className="muted small">of {plural(attempts24h, 'attempt')}</span>
      {lastFailureAt && <p className="muted small">last failure {formatRelative(lastFailureAt)}</p>}
    </div>
  );
}

export function WebhooksPage() {
  useDocumentTitle('Webhooks');
  const hooks = useResource<Page<WebhookDto>>('webhooks', (api, signal) => unwrap(api.openapi.GET('/webhooks', { params: { query: { limit: 100 } }, signal })));
  const [creating, setCreating] = useState(false);
  const list = hooks.data?.data ?? [];
  return (
    <>
      <PageHeader
        title="Webhooks"
        description="Get a signed HTTP callback when a source is ready, a report completes, a model is trained and more."
        actions={
          <>
            <ButtonLink to="/webhooks/events">Event catalog</ButtonLink>
            <Button variant="primary" onClick={() => setCreating(true)}>
              + Add endpoint
            </Button>
          </>
        }
      />
      <ErrorBanner error={hooks.error} onRetry={() => void hooks.reload()} />
      <Card>
        {!hooks.data && !hooks.error ? (
          <Loading rows={3} />
        ) : list.length === 0 ? (
          <EmptyState
            title="No endpoints yet"
            icon="↯"
            action={
              <Button variant="primary" onClick={() => setCreating(true)}>
                Add your first endpoint
              </Button>
            }
          >
            Deliveries follow the Standard Webhooks format, so any of its libraries can verify them.
          </EmptyState>
        ) : (
          <table className="table table-responsive" aria-label="Webhook endpoints">
            <thead>
              <tr>
                <th scope="col">URL</th>
                <th scope="col">Events</th>
                <th scope="col">Status</th>
                <th scope="col">Success (24 h)</th>
                <th scope="col">Created</th>
              </tr>
            </thead>
            <tbody>
              {list.map((w) => (
                <tr key={w.id} data-webhook-id={w.id}>
                  <td data-label="URL">
                    <Link to={`/webhooks/${w.id}`} className="strong-link mono break">
                      {w.url}
                    </Link>
                    {w.description && <p className="muted small">{w.description}</p>}
                  </td>
                  <td data-label="Events">
                    <EventList events={w.events} />
                  </td>
                  <td data-label="Status">
                    <EndpointStatus webhook={w} />
                  </td>
                  <td data-label="Success (24 h)">
                    <EndpointHealth webhook={w} />
                  </td>
                  <td data-label="Created">{formatRelative(w.createdAt)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </Card>
      <CreateWebhookDialog open={creating} onClose={() => setCreating(false)} onCreated={() => void hooks.reload()} />
    </>
  );
}

function lastAttempt(d: DeliveryDto) {
  return d.attempts[d.attempts.length - 1];
}

const DELIVERY_STATUSES: readonly DeliveryDto['status'][] = ['pending', 'succeeded', 'failed', 'cancelled', 'skipped'];

/** The delivery log's filters as the form holds them: since/until in the browser's local time. */
interface LogFilters {
  status: DeliveryDto['status'] | '';
  eventType: PublicEventType | '';
  since: string;
  until: string;
}
const NO_FILTERS: LogFilters = { status: '', eventType: '', since: '', until: '' };

/** datetime-local (local time, no zone) to the API's ISO form; '' when empty or not a date. */
function localToIso(v: string): string | undefined {
  const t = v ? new Date(v).getTime() : NaN;
  return Number.isNaN(t) ? undefined : new Date(t).toISOString();
}

function DeliveryFilters({ value, onChange, error }: { value: LogFilters; onChange: (v: LogFilters) => void; error: ApiError | null }) {
  return (
    <div className="form-row" role="group" aria-label="Filter deliveries">
      <Field label="Status" error={error?.fieldError('status')}>
        {(p) => (
          <select {...p} className="input" value={value.status} onChange={(e) => onChange({ ...value, status: e.target.value as LogFilters['status'] })}>
            <option value="">Any status</option>
            {DELIVERY_STATUSES.map((st) => (
              <option key={st} value={st}>
                {st}
              </option>
            ))}
          </select>
        )}
      </Field>
      <Field label="Event type" error={error?.fieldError('eventType')}>
        {(p) => (
          <select {...p} className="input" value={value.eventType} onChange={(e) => onChange({ ...value, eventType: e.target.value as LogFilters['eventType'] })}>
            <option value="">Any event</option>
            {EVENT_TYPES.map((t) => (
              <option key={t} value={t}>
                {t}
              </option>
            ))}
          </select>
        )}
      </Field>
      <Field label="From" error={error?.fieldError('since')}>
        {(p) => <input {...p} className="input" type="datetime-local" value={value.since} onChange={(e) => onChange({ ...value, since: e.target.value })} />}
      </Field>
      <Field label="Until" error={error?.fieldError('until')}>
        {(p) => <input {...p} className="input" type="datetime-local" value={value.until} onChange={(e) => onChange({ ...value, until: e.target.value })} />}
      </Field>
    </div>
  );
}

function DeliveryLog({ webhookId, watchUntil }: { webhookId: string; watchUntil: number }) {
  const api = useApi();
  const notify = useNotify();
  const [filters, setFilters] = useState<LogFilters>(NO_FILTERS);
  const query = {
    limit: 50,
    ...(filters.status ? { status: filters.status } : {}),
    ...(filters.eventType ? { eventType: filters.eventType } : {}),
    ...(localToIso(filters.since) ? { since: localToIso(filters.since)! } : {}),
    ...(localToIso(filters.until) ? { until: localToIso(filters.until)! } : {}),
  };
  const filtered = Object.keys(query).length > 1;
  const deliveries = useResource<Page<DeliveryDto>>(`deliveries:${webhookId}:${JSON.stringify(query)}`, (a, signal) =>
    unwrap(a.openapi.GET('/webhooks/{id}/deliveries', { params: { path: { id: webhookId }, query }, signal })),
  );
  const [open, setOpen] = useState<Set<string>>(new Set());
  const list = deliveries.data?.data ?? [];
  const pending = list.some((d) => d.status === 'pending');
  const [now, setNow] = useState(Date.now());
  useInterval(
    () => {
      setNow(Date.now());
      void deliveries.reload();
    },
    pending || now < watchUntil || Date.now() < watchUntil ? 1_500 : null,
  );
  const redeliver = useAction(async (d: DeliveryDto) => {
    await unwrap(api.openapi.POST('/webhooks/{id}/deliveries/{messageId}/redeliver', { params: { path: { id: webhookId, messageId: d.id } } }));
    notify('Message queued for redelivery', 'info');
    void deliveries.reload();
    return true;
  });

  return (
    <Card
      title="Deliveries"
      actions={
        <Button size="sm" variant="ghost" onClick={() => void deliveries.reload()}>
          Refresh
        </Button>
      }
    >
      <DeliveryFilters value={filters} onChange={setFilters} error={deliveries.error} />
      <ErrorBanner
        error={deliveries.error && deliveries.error.fieldErrors.length === 0 ? deliveries.error : redeliver.error}
        onRetry={deliveries.error ? () => void deliveries.reload() : undefined}
      />
      {!deliveries.data && !deliveries.error ? (
        <Loading rows={3} />
      ) : deliveries.error ? null : list.length === 0 && filtered ? (
        <EmptyState
          title="No deliveries match these filters"
          icon="✉"
          action={
            <Button size="sm" onClick={() => setFilters(NO_FILTERS)}>
              Clear filters
            </Button>
          }
        />
      ) : list.length === 0 ? (
        <EmptyState title="No deliveries yet" icon="✉">
          Send a test event to see a delivery here.
        </EmptyState>
      ) : (
        <table className="table table-responsive" aria-label="Deliveries" data-testid="deliveries">
          <thead>
            <tr>
              <th scope="col">Event</th>
              <th scope="col">Status</th>
              <th scope="col" className="num">
                Attempts
              </th>
              <th scope="col">Last response</th>
              <th scope="col">When</th>
              <th scope="col">
                <span className="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {list.map((d) => {
              const last = lastAttempt(d);
              const expanded = open.has(d.id);
              return (
                <Fragment key={d.id}>
                  <tr data-delivery-id={d.id} data-status={d.status}>
                    <td data-label="Event">
                      <Badge>{d.type}</Badge>
                      <p className="mono small muted break">{d.id}</p>
                    </td>
                    <td data-label="Status">
                      <StatusBadge status={d.status} />
                      {d.nextAttemptAt && d.status === 'pending' && <p className="muted small">next try {formatRelative(d.nextAttemptAt)}</p>}
                    </td>
                    <td data-label="Attempts" className="num">
                      {d.attempts.length}
                    </td>
                    <td data-label="Last response">
                      {last ? (
                        <>
                          <Badge tone={last.statusCode && last.statusCode < 300 ? 'success' : 'danger'}>{last.statusCode ?? 'no answer'}</Badge>{' '}
                          <span className="muted small">{formatMs(last.latencyMs)}</span>
                        </>
                      ) : (
                        '—'
                      )}
                    </td>
                    <td data-label="When">{formatRelative(d.createdAt)}</td>
                    <td className="cell-actions">
                      <Button
                        size="sm"
                        variant="ghost"
                        aria-expanded={expanded}
                        aria-controls={`attempts-${d.id}`}
                        onClick={() =>
                          setOpen((o) => {
                            const n = new Set(o);
                            if (n.has(d.id)) n.delete(d.id);
                            else n.add(d.id);
                            return n;
                          })
                        }
                      >
                        {expanded ? 'Hide attempts' : 'Attempts'}
                      </Button>
                      {d.status !== 'pending' && (
                        <Button size="sm" variant="ghost" onClick={() => void redeliver.run(d)}>
                          Redeliver
                        </Button>
                      )}
                    </td>
                  </tr>
                  {expanded && (
                    <tr id={`attempts-${d.id}`} className="subrow">
                      <td colSpan={6}>
                        {d.attempts.length === 0 ? (
                          <p className="muted small">No attempt yet.</p>
                        ) : (
                          <ol className="attempts">
                            {d.attempts.map((a, i) => (
                              <li key={i}>
                                <span className="attempt-n">#{i + 1}</span>
                                <time dateTime={a.at}>{formatDate(a.at)}</time>
                                <Badge tone={a.statusCode && a.statusCode < 300 ? 'success' : 'danger'}>{a.statusCode ?? 'no answer'}</Badge>
                                <span className="muted">{formatMs(a.latencyMs)}</span>
                                {a.error && <span className="cell-error">{a.error}</span>}
                              </li>
                            ))}
                          </ol>
                        )}
                      </td>
                    </tr>
                  )}
                </Fragment>
              );
            })}
          </tbody>
        </table>
      )}
    </Card>
  );
}

export function WebhookDetailPage({ id }: { id: string }) {
  const api = useApi();
  const notify = useNotify();
  const hook = useResource<WebhookDto>(`webhook:${id}`, (a, signal) => unwrap(a.openapi.GET('/webhooks/{id}', { params: { path: { id } }, signal })));
  const w = hook.data;
  useDocumentTitle(w ? `Webhook ${new URL(w.url).host}` : 'Webhook');
  const [watchUntil, setWatchUntil] = useState(0);
  const [rotated, setRotated] = useState<WebhookSecretRotated | null>(null);
  const [confirmRotate, setConfirmRotate] = useState(false);
  const [deleting, setDeleting] = useState(false);
  const [editing, setEditing] = useState(false);
  const test = useAction(async () => {
    await unwrap(api.openapi.POST('/webhooks/{id}/test', { params: { path: { id } } }));
    notify('Test event sent; watch the deliveries below', 'info');
    setWatchUntil(Date.now() + 20_000);
    return true;
  });
  const rotate = useAction(async () => {
    const r = await unwrap(api.openapi.POST('/webhooks/{id}/rotate-secret', { params: { path: { id } } }));
    setConfirmRotate(false);
    setRotated(r);
    return r;
  });
  const enable = useAction(async () => {
    await unwrap(api.openapi.POST('/webhooks/{id}/enable', { params: { path: { id } } }));
    notify('Endpoint enabled: new events go to it again');
    await hook.reload();
    return true;
  });
  const remove = useAction(async () => {
    await unwrap(api.openapi.DELETE('/webhooks/{id}', { params: { path: { id } } }));
    notify('Endpoint deleted');
    navigate('/webhooks', { replace: true });
    return true;
  });

  if (!w) {
    return (
      <>
        <PageHeader title="Webhook" back={{ to: '/webhooks', label: 'Webhooks' }} />
        {hook.error ? <ErrorBanner error={hook.error} onRetry={() => void hook.reload()} /> : <Loading rows={5} />}
      </>
    );
  }
  return (
    <>
      <PageHeader
        title={<span className="mono break">{w.url}</span>}
        back={{ to: '/webhooks', label: 'Webhooks' }}
        actions={
          <>
            <Button variant="primary" onClick={() => void test.run()} loading={test.pending} disabled={w.status !== 'enabled'}>
              Send test event
            </Button>
            <Button onClick={() => setEditing(true)}>Edit</Button>
            <Button onClick={() => setConfirmRotate(true)}>Rotate secret</Button>
            <Button variant="danger" onClick={() => setDeleting(true)}>
              Delete
            </Button>
          </>
        }
      />
      <ErrorBanner error={test.error} />
      {w.status === 'disabled' && (
        <Alert tone="error" title="This endpoint is disabled">
          <p>{w.disabledReason ?? 'Deliveries kept failing.'}</p>
          <p>Once the receiver is fixed, enable it again: new events go to it, and missed messages can be redelivered from the log below.</p>
          <Button variant="primary" onClick={() => void enable.run()} loading={enable.pending}>
            Enable endpoint
          </Button>
        </Alert>
      )}
      <ErrorBanner error={enable.error} />
      <Card title="Endpoint">
        <KeyValue
          items={[
            ['Status', <EndpointStatus key="s" webhook={w} />],
            ['Success (24 h)', <EndpointHealth key="h" webhook={w} />],
            ['Events', <EventList key="e" events={w.events} />],
            ['Description', w.description || '—'],
            ['Created', formatDate(w.createdAt)],
            ['ID', <code key="id">{w.id}</code>],
          ]}
        />
      </Card>
      <DeliveryLog webhookId={w.id} watchUntil={watchUntil} />
      {editing && <EditWebhookDialog webhook={w} open={editing} onClose={() => setEditing(false)} onSaved={() => void hook.reload()} />}
      <ConfirmDialog
        open={confirmRotate}
        title="Rotate the signing secret?"
        confirmLabel="Rotate secret"
        pending={rotate.pending}
        error={rotate.error}
        onClose={() => setConfirmRotate(false)}
        onConfirm={() => void rotate.run()}
      >
        <p>A new secret is issued. For a while, deliveries carry signatures with both secrets, so you can switch your receiver without dropping any.</p>
      </ConfirmDialog>
      <Dialog open={rotated !== null} onClose={() => setRotated(null)} title="New signing secret" dismissible={false}>
        {rotated && (
          <>
            <SecretReveal
              label="Signing secret"
              secret={rotated.secret}
              warning={`Deliveries are also signed with the old secret until ${formatDate(rotated.previousSecretExpiresAt)}. Update your receiver before then.`}
            />
            <div className="dialog-footer">
              <Button variant="primary" onClick={() => setRotated(null)}>
                I have saved it
              </Button>
            </div>
          </>
        )}
      </Dialog>
      <ConfirmDialog
        open={deleting}
        title="Delete this endpoint?"
        confirmLabel="Delete endpoint"
        pending={remove.pending}
        error={remove.error}
        onClose={() => setDeleting(false)}
        onConfirm={() => void remove.run()}
      >
        <p>
          No more events are sent to <code className="break">{w.url}</code>. Pending retries are cancelled.
        </p>
      </ConfirmDialog>
    </>
  );
}
