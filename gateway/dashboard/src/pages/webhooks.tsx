import { Fragment, useState } from 'react';
import { ApiError, unwrap, type RequestBodyOf } from '../api/client.ts';
import {
  EVENT_TYPES,
  MAX_WEBHOOK_FILTER_CONDITIONS as MAX_FILTER_CONDITIONS,
  MAX_WEBHOOK_FILTER_DEPTH as MAX_FILTER_DEPTH,
  MAX_WEBHOOK_RATE_LIMIT_PER_SECOND as MAX_RATE_LIMIT_PER_SECOND,
  WEBHOOK_FILTER_OPERATORS as FILTER_OPERATORS,
  type DeliveryDetailDto,
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
  BadgeList,
  Button,
  ButtonLink,
  Card,
  ConfirmDialog,
  CopyButton,
  DataTable,
  Dialog,
  EmptyState,
  ErrorBanner,
  Field,
  FormDialog,
  KeyValue,
  ListBody,
  Loading,
  PageHeader,
  PageNotLoaded,
  SecretDialog,
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
  ordered: boolean;
  /** Max deliveries per second as typed; empty: no limit. */
  rateLimit: string;
  /** The content filter as JSON text; empty: every event of the chosen types. */
  filter: string;
}

const rateLimitProblem = (v: string) =>
  v.trim() && !(/^\d+$/.test(v.trim()) && Number(v) >= 1 && Number(v) <= MAX_RATE_LIMIT_PER_SECOND)
    ? `Enter a whole number from 1 to ${MAX_RATE_LIMIT_PER_SECOND}, or leave it empty for no limit`
    : undefined;

/** The filter's JSON, or why it is not JSON; its shape is the API's to check (its errors name the exact spot). */
function parseFilter(text: string): { value: unknown } | { problem: string } {
  if (!text.trim()) return { value: null };
  try {
    return { value: JSON.parse(text) as unknown };
  } catch (e) {
    return { problem: `Not valid JSON: ${(e as Error).message}` };
  }
}
const filterProblem = (text: string) => {
  const f = parseFilter(text);
  return 'problem' in f ? f.problem : undefined;
};

/** The form's own checks, as field errors shaped like the API's (so both show the same way). */
function checkEndpointForm(f: EndpointForm): ApiError | null {
  const local: { path: string; message: string }[] = [];
  const badUrl = urlProblem(f.url);
  if (badUrl) local.push({ path: 'url', message: badUrl });
  if (f.events.length === 0) local.push({ path: 'events', message: 'Pick at least one event' });
  const badRate = rateLimitProblem(f.rateLimit);
  if (badRate) local.push({ path: 'rateLimitPerSecond', message: badRate });
  const badFilter = filterProblem(f.filter);
  if (badFilter) local.push({ path: 'filter', message: badFilter });
  return local.length ? new ApiError({ status: 400, code: 'validation_failed', title: 'Check the highlighted fields', detail: '', errors: local }) : null;
}

/** The delivery settings of a checked form, as the API takes them. */
function deliverySettings(f: EndpointForm): { rateLimitPerSecond: number | null; ordering: WebhookDto['ordering']; filter: WebhookDto['filter'] } {
  const parsed = parseFilter(f.filter);
  return {
    rateLimitPerSecond: f.rateLimit.trim() ? Number(f.rateLimit) : null,
    ordering: f.ordered ? 'ordered' : 'unordered',
    filter: 'value' in parsed ? (parsed.value as WebhookDto['filter']) : null,
  };
}

/**
 * Every error the API gave beneath `filter` (a nested one names its spot, like `filter.and.0.path`), so a
 * filter with several faults shows them all on the one field.
 */
function filterErrors(err: ApiError | null): string | undefined {
  const errors = err?.fieldErrors.filter((e) => e.path === 'filter' || e.path.startsWith('filter.')) ?? [];
  if (errors.length === 0) return undefined;
  return errors.map((e) => (e.path === 'filter' ? e.message : `${e.path}: ${e.message}`)).join('; ');
}

const FILTER_EXAMPLE = JSON.stringify(
  {
    and: [
      { path: '$.type', op: 'eq', value: 'report.completed' },
      { path: '$.data.rowCount', op: 'gt', value: 1000 },
    ],
  },
  null,
  2,
);

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
      <div className="field">
        <label className="check">
          <input
            type="checkbox"
            checked={value.ordered}
            aria-describedby="ordered-hint"
            onChange={(e) => {
              onChange({ ...value, ordered: e.target.checked });
              action.fixField('ordering');
            }}
          />
          Ordered delivery
        </label>
        <p id="ordered-hint" className="field-hint">
          Events of one source, model or report arrive in the order they happened: each waits until the one before it succeeded or ran out of retries.
        </p>
        {err?.fieldError('ordering') && <p className="field-error">⚠ {err.fieldError('ordering')}</p>}
      </div>
      <Field label="Max deliveries per second" hint="Empty: no limit. Deliveries beyond it wait their turn." error={err?.fieldError('rateLimitPerSecond')}>
        {(p) => (
          <input
            {...p}
            className="input input-narrow"
            type="number"
            inputMode="numeric"
            min={1}
            max={MAX_RATE_LIMIT_PER_SECOND}
            step={1}
            placeholder="Unlimited"
            value={value.rateLimit}
            onChange={(e) => {
              onChange({ ...value, rateLimit: e.target.value });
              action.fixField('rateLimitPerSecond', rateLimitProblem(e.target.value) ?? null);
            }}
          />
        )}
      </Field>
      <Field
        label="Content filter"
        hint={
          <>
            Optional JSON: only events whose payload matches are sent; the others count as filtered out. A comparison is <code>{'{"path", "op", "value"}'}</code> with a path like{' '}
            <code>$.type</code> or <code>$.data.rowCount</code> and an op among{' '}
            {FILTER_OPERATORS.map((op, i) => (
              <Fragment key={op}>
                {i > 0 && ', '}
                <code>{op}</code>
              </Fragment>
            ))}{' '}
            (<code>in</code> takes an array); combine them with <code>and</code>, <code>or</code>, <code>not</code>, up to {MAX_FILTER_DEPTH} levels and {MAX_FILTER_CONDITIONS}{' '}
            comparisons. See <code>WebhookFilter</code> in the{' '}
            <a href="/docs" target="_blank" rel="noopener">
              API reference
            </a>
            .
          </>
        }
        error={filterErrors(err)}
      >
        {(p) => (
          <textarea
            {...p}
            className="input textarea mono"
            rows={6}
            spellCheck={false}
            placeholder={FILTER_EXAMPLE}
            value={value.filter}
            onChange={(e) => {
              onChange({ ...value, filter: e.target.value });
              action.fixField('filter', filterProblem(e.target.value) ?? null);
            }}
          />
        )}
      </Field>
    </>
  );
}

/** The paths of the API's errors that EndpointFields shows beside a field. */
const ENDPOINT_FIELDS = ['url', 'events', 'description', 'ordering', 'rateLimitPerSecond', 'filter'];

const EMPTY_FORM: EndpointForm = { url: '', events: ['*'], description: '', ordered: false, rateLimit: '', filter: '' };

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
  const submit = async () => {
    const local = checkEndpointForm(form);
    if (local) return create.setError(local);
    const w = await create.run({ url: form.url.trim(), events: form.events, description: form.description.trim(), ...deliverySettings(form) });
    if (w) {
      setCreated(w);
      onCreated(w);
    }
  };
  if (created) {
    return (
      <SecretDialog
        open={open}
        onDone={() => {
          close();
          navigate(`/webhooks/${created.id}`);
        }}
        title="Endpoint added"
        label="Signing secret"
        secret={created.secret}
        warning="Use it to verify the webhook-signature header of every delivery (Standard Webhooks). It is shown only now; you can rotate it later."
      />
    );
  }
  return (
    <FormDialog
      open={open}
      onClose={close}
      title="Add a webhook endpoint"
      description="We POST signed JSON to this URL when events happen, retrying with backoff until it answers 2xx."
      wide
      onSubmit={submit}
      submitLabel="Add endpoint"
      pending={create.pending}
      error={create.error}
      fields={ENDPOINT_FIELDS}
    >
      <EndpointFields value={form} onChange={setForm} action={create} />
    </FormDialog>
  );
}

/** Edits an endpoint's URL, events and description; the API checks a new URL as it does at registration. */
function EditWebhookDialog({ webhook, open, onClose, onSaved }: { webhook: WebhookDto; open: boolean; onClose: () => void; onSaved: (w: WebhookDto) => void }) {
  const api = useApi();
  const notify = useNotify();
  const initial = (): EndpointForm => ({
    url: webhook.url,
    events: webhook.events,
    description: webhook.description,
    ordered: webhook.ordering === 'ordered',
    rateLimit: webhook.rateLimitPerSecond === null ? '' : String(webhook.rateLimitPerSecond),
    filter: webhook.filter ? JSON.stringify(webhook.filter, null, 2) : '',
  });
  const [form, setForm] = useState<EndpointForm>(initial);
  const save = useAction((body: UpdateWebhookBody) => unwrap(api.openapi.PATCH('/webhooks/{id}', { params: { path: { id: webhook.id } }, body })));
  const close = () => {
    save.setError(null);
    onClose();
  };
  const submit = async () => {
    const local = checkEndpointForm(form);
    if (local) return save.setError(local);
    // Only what changed is sent, so a concurrent edit of another setting is not overwritten.
    const body: UpdateWebhookBody = {};
    if (form.url.trim() !== webhook.url) body.url = form.url.trim();
    if (form.events.join() !== webhook.events.join()) body.events = form.events;
    if (form.description.trim() !== webhook.description) body.description = form.description.trim();
    const settings = deliverySettings(form);
    if (settings.rateLimitPerSecond !== webhook.rateLimitPerSecond) body.rateLimitPerSecond = settings.rateLimitPerSecond;
    if (settings.ordering !== webhook.ordering) body.ordering = settings.ordering;
    if (JSON.stringify(settings.filter) !== JSON.stringify(webhook.filter)) body.filter = settings.filter;
    if (Object.keys(body).length === 0) return close();
    const w = await save.run(body);
    if (w) {
      notify('Endpoint updated');
      onSaved(w);
      close();
    }
  };
  return (
    <FormDialog
      open={open}
      onClose={close}
      title="Edit endpoint"
      description="Messages not yet sent go to the new URL."
      wide
      onSubmit={submit}
      submitLabel="Save changes"
      pending={save.pending}
      error={save.error}
      fields={ENDPOINT_FIELDS}
    >
      <EndpointFields value={form} onChange={setForm} action={save} />
    </FormDialog>
  );
}

const EventList = ({ events }: { events: string[] }) => <BadgeList items={events} all={events.includes('*')} allLabel="All events" />;

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

/** The endpoint's Retry-After hold, while it lasts. */
function PausedUntil({ webhook, now = Date.now() }: { webhook: WebhookDto; now?: number }) {
  if (!webhook.pausedUntil || new Date(webhook.pausedUntil).getTime() <= now) return null;
  return (
    <span className="badge badge-warning" data-testid="paused-until" title="The receiver answered 429 or 503 with Retry-After: nothing is sent to it before then">
      Paused until {formatDate(webhook.pausedUntil)}
    </span>
  );
}

/** The delivery settings that differ from the defaults (a filter and what it kept back, ordering, a rate limit). */
function DeliverySettings({ webhook }: { webhook: WebhookDto }) {
  const { filter, ordering, rateLimitPerSecond, stats } = webhook;
  if (!filter && ordering === 'unordered' && rateLimitPerSecond === null && stats.filtered === 0) return <span className="muted small">Defaults</span>;
  return (
    <span className="badge-list" data-testid="delivery-settings">
      {(filter || stats.filtered > 0) && <Badge tone="info">{`Filter: ${stats.filtered.toLocaleString('en')} filtered out`}</Badge>}
      {ordering === 'ordered' && <Badge>Ordered</Badge>}
      {rateLimitPerSecond !== null && <Badge>{`≤ ${rateLimitPerSecond}/s`}</Badge>}
    </span>
  );
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
        <ListBody
          state={hooks}
          count={list.length}
          empty={
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
          }
        >
          <DataTable
            label="Webhook endpoints"
            rows={list}
            rowKey={(w) => w.id}
            rowData={(w) => ({ 'data-webhook-id': w.id })}
            columns={[
              {
                header: 'URL',
                cell: (w) => (
                  <>
                    <Link to={`/webhooks/${w.id}`} className="strong-link mono break">
                      {w.url}
                    </Link>
                    {w.description && <p className="muted small">{w.description}</p>}
                  </>
                ),
              },
              { header: 'Events', cell: (w) => <EventList events={w.events} /> },
              {
                header: 'Status',
                cell: (w) => (
                  <>
                    <EndpointStatus webhook={w} /> <PausedUntil webhook={w} />
                  </>
                ),
              },
              { header: 'Success (24 h)', cell: (w) => <EndpointHealth webhook={w} /> },
              { header: 'Delivery', cell: (w) => <DeliverySettings webhook={w} /> },
              { header: 'Created', cell: (w) => formatRelative(w.createdAt) },
            ]}
          />
        </ListBody>
      </Card>
      <CreateWebhookDialog open={creating} onClose={() => setCreating(false)} onCreated={() => void hooks.reload()} />
    </>
  );
}

/** The last attempt's status code and latency, or a dash before the first. */
function LastResponse({ delivery }: { delivery: DeliveryDto }) {
  const last = delivery.attempts.at(-1);
  if (!last) return <>—</>;
  return (
    <>
      <Badge tone={last.statusCode && last.statusCode < 300 ? 'success' : 'danger'}>{last.statusCode ?? 'no answer'}</Badge>{' '}
      <span className="muted small">{formatMs(last.latencyMs)}</span>
    </>
  );
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

/** Retry now (a pending message's waiting retry) and redeliver (a finished one), each followed by `after`. */
function useDeliveryActions(webhookId: string, after: () => void) {
  const api = useApi();
  const notify = useNotify();
  const path = (messageId: string) => ({ params: { path: { id: webhookId, messageId } } });
  const retry = useAction(async (messageId: string) => {
    await unwrap(api.openapi.POST('/webhooks/{id}/deliveries/{messageId}/retry', path(messageId)));
    notify('Retry queued: it goes out now', 'info');
    after();
    return true;
  });
  const redeliver = useAction(async (messageId: string) => {
    await unwrap(api.openapi.POST('/webhooks/{id}/deliveries/{messageId}/redeliver', path(messageId)));
    notify('Message queued for redelivery', 'info');
    after();
    return true;
  });
  return { retry, redeliver };
}

/** A pending message that has been tried and waits for its next retry. */
const waitsForRetry = (d: DeliveryDto) => d.status === 'pending' && d.attempts.length > 0 && d.nextAttemptAt !== null;

function HeaderList({ headers, label }: { headers: { name: string; value: string }[]; label: string }) {
  if (headers.length === 0) return <p className="muted small">None.</p>;
  return (
    <dl className="header-list" aria-label={label}>
      {headers.map(({ name, value }, i) => (
        <Fragment key={`${name}-${i}`}>
          <dt>{name}</dt>
          <dd>{value}</dd>
        </Fragment>
      ))}
    </dl>
  );
}

/** A JSON body indented; anything else (or JSON cut at the cap) as it came. */
function prettyBody(body: string): string {
  try {
    return JSON.stringify(JSON.parse(body), null, 2);
  } catch {
    return body;
  }
}

type AttemptDetail = DeliveryDetailDto['attempts'][number];

/** What one attempt sent and got back; `null` parts are attempts made before these were recorded. */
function AttemptExchange({ attempt, n }: { attempt: AttemptDetail; n: number }) {
  const r = attempt.response;
  return (
    <div className="delivery-detail" data-testid={`attempt-${n}-detail`}>
      <section aria-label={`Attempt ${n} response`}>
        <h3>Response</h3>
        {!r ? (
          <p className="muted small">{attempt.statusCode === null ? `No answer${attempt.error ? `: ${attempt.error}` : ''}.` : 'Not recorded for this attempt.'}</p>
        ) : (
          <>
            <HeaderList headers={r.headers} label={`Attempt ${n} response headers`} />
            {r.headersTruncated && <p className="truncated-note">More headers came; the first 32 are kept, each cut at 512 characters.</p>}
            {r.body ? (
              <pre className="code-block" data-testid={`attempt-${n}-body`}>
                <code>{prettyBody(r.body)}</code>
              </pre>
            ) : (
              <p className="muted small">Empty body.</p>
            )}
            {r.bodyTruncated && <p className="truncated-note">The body was longer; its first 4 KiB are shown.</p>}
          </>
        )}
      </section>
      <section aria-label={`Attempt ${n} request headers`}>
        <h3>Request headers</h3>
        {attempt.requestHeaders ? (
          <HeaderList headers={Object.entries(attempt.requestHeaders).map(([name, value]) => ({ name, value }))} label={`Attempt ${n} request headers`} />
        ) : (
          <p className="muted small">Not recorded for this attempt.</p>
        )}
      </section>
    </div>
  );
}

function AttemptsTable({ attempts }: { attempts: AttemptDetail[] }) {
  // The latest attempt is open: it is the one that says what happens next.
  const [open, setOpen] = useState<Set<number>>(() => new Set([attempts.length]));
  const toggle = (n: number) =>
    setOpen((o) => {
      const next = new Set(o);
      if (next.has(n)) next.delete(n);
      else next.add(n);
      return next;
    });
  if (attempts.length === 0) return <p className="muted small">No attempt yet.</p>;
  return (
    <table className="table table-responsive" aria-label="Attempts" data-testid="attempts">
      <thead>
        <tr>
          <th scope="col">#</th>
          <th scope="col">Time</th>
          <th scope="col">Status</th>
          <th scope="col" className="num">
            Latency
          </th>
          <th scope="col">Retry-After</th>
          <th scope="col">
            <span className="visually-hidden">Details</span>
          </th>
        </tr>
      </thead>
      <tbody>
        {attempts.map((a, i) => {
          const n = i + 1;
          return (
            <Fragment key={n}>
              <tr data-attempt={n}>
                <td data-label="#">{n}</td>
                <td data-label="Time">
                  <time dateTime={a.at}>{formatDate(a.at)}</time>
                </td>
                <td data-label="Status">
                  <Badge tone={a.statusCode && a.statusCode < 300 ? 'success' : 'danger'}>{a.statusCode ?? 'no answer'}</Badge>
                  {a.error && <p className="cell-error small">{a.error}</p>}
                </td>
                <td data-label="Latency" className="num">
                  {formatMs(a.latencyMs)}
                </td>
                <td data-label="Retry-After">
                  {a.retryAfterMs === null ? (
                    <span className="muted">—</span>
                  ) : (
                    <span title="The receiver asked to wait this long; the endpoint's next attempts waited">
                      <Badge tone="warning">{`Retry-After ${formatMs(a.retryAfterMs)}`}</Badge>
                    </span>
                  )}
                </td>
                <td className="cell-actions">
                  <Button size="sm" variant="ghost" aria-expanded={open.has(n)} aria-controls={`attempt-${n}`} onClick={() => toggle(n)}>
                    {open.has(n) ? 'Hide' : 'Headers & body'}
                  </Button>
                </td>
              </tr>
              {open.has(n) && (
                <tr id={`attempt-${n}`} className="subrow">
                  <td colSpan={6}>
                    <AttemptExchange attempt={a} n={n} />
                  </td>
                </tr>
              )}
            </Fragment>
          );
        })}
      </tbody>
    </table>
  );
}

/** One message in a drawer: payload, headers sent and answers per attempt; retry now or redeliver from here. */
function DeliveryDrawer({ webhookId, messageId, onClose, onChanged }: { webhookId: string; messageId: string | null; onClose: () => void; onChanged: () => void }) {
  const detail = useResource<DeliveryDetailDto>(messageId ? `delivery:${webhookId}:${messageId}` : null, (a, signal) =>
    unwrap(a.openapi.GET('/webhooks/{id}/deliveries/{messageId}', { params: { path: { id: webhookId, messageId: messageId! } }, signal })),
  );
  const d = detail.data;
  useInterval(() => void detail.reload(), d?.status === 'pending' ? 1_500 : null);
  const { retry, redeliver } = useDeliveryActions(webhookId, () => {
    void detail.reload();
    onChanged();
  });
  const payload = d ? JSON.stringify(d.payload, null, 2) : '';
  return (
    <Dialog open={messageId !== null} onClose={onClose} title="Message" drawer>
      <ErrorBanner error={detail.error ?? retry.error ?? redeliver.error} onRetry={detail.error ? () => void detail.reload() : undefined} />
      {!d ? (
        !detail.error && <Loading rows={4} />
      ) : (
        <div className="delivery-detail" data-testid="delivery-detail" data-status={d.status}>
          <KeyValue
            items={[
              ['Message ID', <code key="id">{d.id}</code>],
              ['Event', <Badge key="t">{d.type}</Badge>],
              [
                'Status',
                <span key="s">
                  <StatusBadge status={d.status} />
                  {d.status === 'pending' && d.nextAttemptAt && <span className="muted small"> next try {formatRelative(d.nextAttemptAt)}</span>}
                </span>,
              ],
              ['Created', formatDate(d.createdAt)],
            ]}
          />
          <div className="delivery-actions">
            {d.status === 'pending' ? (
              <Button variant="primary" size="sm" onClick={() => void retry.run(d.id)} loading={retry.pending} disabled={!waitsForRetry(d)}>
                Retry now
              </Button>
            ) : (
              <Button size="sm" onClick={() => void redeliver.run(d.id)} loading={redeliver.pending}>
                Redeliver
              </Button>
            )}
          </div>
          <section aria-label="Payload">
            <h3>Payload</h3>
            <pre className="code-block" data-testid="payload">
              <code>{payload}</code>
            </pre>
            <CopyButton size="sm" value={payload} label="Copy payload" />
          </section>
          <section aria-label="Attempts">
            <h3>Attempts</h3>
            <AttemptsTable key={d.attempts.length} attempts={d.attempts} />
          </section>
        </div>
      )}
    </Dialog>
  );
}

/** The `datetime-local` value (local time, minutes) of a moment. */
function toLocalInput(ms: number): string {
  const d = new Date(ms);
  return new Date(ms - d.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
}

/**
 * Replays the endpoint's messages since a time that did not reach it (failed, cancelled, skipped), showing how
 * many were queued; the API queues at most 1,000 a call, so the rest is one more click away.
 */
function ReplayDialog({ webhookId, open, onClose, onReplayed }: { webhookId: string; open: boolean; onClose: () => void; onReplayed: () => void }) {
  const api = useApi();
  const [since, setSince] = useState(() => toLocalInput(Date.now() - 86_400_000));
  const [result, setResult] = useState<{ queued: number; nextSince: string | null } | null>(null);
  const replay = useAction(async (from: string) => {
    const r = await unwrap(api.openapi.POST('/webhooks/{id}/replay', { params: { path: { id: webhookId } }, body: { since: from } }));
    setResult((old) => ({ queued: (old?.queued ?? 0) + r.replayed, nextSince: r.hasMore ? r.nextSince : null }));
    onReplayed();
    return r;
  });
  const close = () => {
    setResult(null);
    replay.setError(null);
    onClose();
  };
  const submit = async () => {
    // With more left to replay, the form's button sends the next batch; otherwise it starts from `since`.
    if (result?.nextSince) return replay.run(result.nextSince);
    const iso = localToIso(since);
    if (!iso) {
      return replay.setError(
        new ApiError({ status: 400, code: 'validation_failed', title: 'Check the highlighted fields', detail: '', errors: [{ path: 'since', message: 'Pick a date and time' }] }),
      );
    }
    setResult(null);
    await replay.run(iso);
  };
  return (
    <FormDialog
      open={open}
      onClose={close}
      title="Replay messages"
      description="Sends again every message since this time that did not reach the endpoint: failed, cancelled, or skipped while it was disabled. Delivered and pending messages are left alone."
      onSubmit={submit}
      submitLabel={result?.nextSince ? 'Replay the next batch' : 'Replay'}
      cancelLabel={result ? 'Done' : 'Cancel'}
      pending={replay.pending}
      error={replay.error}
      fields={['since']}
    >
      <Field label="Since" hint="The event's time, in your time zone." error={replay.error?.fieldError('since')} required>
        {(p) => (
          <input
            {...p}
            className="input"
            type="datetime-local"
            value={since}
            onChange={(e) => {
              setSince(e.target.value);
              replay.fixField('since');
            }}
          />
        )}
      </Field>
      {result && (
        <Alert tone={result.queued ? 'success' : 'info'} title={result.queued ? `${plural(result.queued, 'message')} queued` : 'Nothing to replay'}>
          <p role="status" data-testid="replay-result">
            {result.queued
              ? `${plural(result.queued, 'message')} will be sent again; watch the deliveries log.`
              : 'Every message since then reached the endpoint or is still being sent.'}
          </p>
          {result.nextSince && <p>More remain, from {formatDate(result.nextSince)}.</p>}
        </Alert>
      )}
    </FormDialog>
  );
}

function DeliveryLog({ webhookId, watchUntil, enabled }: { webhookId: string; watchUntil: number; enabled: boolean }) {
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
  const [selected, setSelected] = useState<string | null>(null);
  const [replaying, setReplaying] = useState(false);
  const [replayedAt, setReplayedAt] = useState(0);
  const list = deliveries.data?.data ?? [];
  const pending = list.some((d) => d.status === 'pending');
  const [now, setNow] = useState(Date.now());
  const watching = Math.max(watchUntil, replayedAt + 20_000);
  useInterval(
    () => {
      setNow(Date.now());
      void deliveries.reload();
    },
    // A query the API refused (a bad filter) is not asked again until the filters change.
    (pending || now < watching || Date.now() < watching) && !deliveries.error?.fieldErrors.length ? 1_500 : null,
  );
  const { retry, redeliver } = useDeliveryActions(webhookId, () => void deliveries.reload());

  return (
    <Card
      title="Deliveries"
      actions={
        <>
          <Button size="sm" onClick={() => setReplaying(true)} disabled={!enabled}>
            Replay since…
          </Button>
          <Button size="sm" variant="ghost" onClick={() => void deliveries.reload()}>
            Refresh
          </Button>
        </>
      }
    >
      <DeliveryFilters value={filters} onChange={setFilters} error={deliveries.error} />
      <ErrorBanner
        error={deliveries.error && deliveries.error.fieldErrors.length === 0 ? deliveries.error : (redeliver.error ?? retry.error)}
        onRetry={deliveries.error ? () => void deliveries.reload() : undefined}
      />
      <ListBody
        state={deliveries}
        count={list.length}
        empty={
          filtered ? (
            <EmptyState
              title="No deliveries match these filters"
              icon="✉"
              action={
                <Button size="sm" onClick={() => setFilters(NO_FILTERS)}>
                  Clear filters
                </Button>
              }
            />
          ) : (
            <EmptyState title="No deliveries yet" icon="✉">
              Send a test event to see a delivery here.
            </EmptyState>
          )
        }
      >
        <DataTable
          label="Deliveries"
          testId="deliveries"
          rows={list}
          rowKey={(d) => d.id}
          rowData={(d) => ({ 'data-delivery-id': d.id, 'data-status': d.status })}
          columns={[
            {
              header: 'Event',
              cell: (d) => (
                <>
                  <Badge>{d.type}</Badge>
                  <p className="mono small muted break">{d.id}</p>
                </>
              ),
            },
            {
              header: 'Status',
              cell: (d) => (
                <>
                  <StatusBadge status={d.status} />
                  {d.nextAttemptAt && d.status === 'pending' && <p className="muted small">next try {formatRelative(d.nextAttemptAt)}</p>}
                </>
              ),
            },
            { header: 'Attempts', numeric: true, cell: (d) => d.attempts.length },
            { header: 'Last response', cell: (d) => <LastResponse delivery={d} /> },
            { header: 'When', cell: (d) => formatRelative(d.createdAt) },
            {
              header: 'Actions',
              hiddenHeader: true,
              className: 'cell-actions',
              cell: (d) => (
                <>
                  <Button size="sm" variant="ghost" aria-haspopup="dialog" onClick={() => setSelected(d.id)}>
                    Details
                  </Button>
                  {waitsForRetry(d) && (
                    <Button size="sm" variant="ghost" onClick={() => void retry.run(d.id)}>
                      Retry now
                    </Button>
                  )}
                  {d.status !== 'pending' && (
                    <Button size="sm" variant="ghost" onClick={() => void redeliver.run(d.id)}>
                      Redeliver
                    </Button>
                  )}
                </>
              ),
            },
          ]}
        />
      </ListBody>
      <DeliveryDrawer webhookId={webhookId} messageId={selected} onClose={() => setSelected(null)} onChanged={() => void deliveries.reload()} />
      <ReplayDialog webhookId={webhookId} open={replaying} onClose={() => setReplaying(false)} onReplayed={() => setReplayedAt(Date.now())} />
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

  if (!w) return <PageNotLoaded title="Webhook" back={{ to: '/webhooks', label: 'Webhooks' }} resource={hook} rows={5} />;
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
            [
              'Status',
              <span key="s">
                <EndpointStatus webhook={w} /> <PausedUntil webhook={w} />
              </span>,
            ],
            ['Success (24 h)', <EndpointHealth key="h" webhook={w} />],
            ['Events', <EventList key="e" events={w.events} />],
            [
              'Content filter',
              w.filter ? (
                <pre key="f" className="code-block" data-testid="endpoint-filter">
                  <code>{JSON.stringify(w.filter, null, 2)}</code>
                </pre>
              ) : (
                'None: every event of these types is sent'
              ),
            ],
            [
              'Filtered out',
              <span key="fo" data-testid="filtered-count">
                {w.stats.filtered.toLocaleString('en')}
              </span>,
            ],
            ['Ordering', w.ordering === 'ordered' ? 'Ordered: per source, model or report, in the order events happened' : 'Unordered'],
            ['Max deliveries per second', w.rateLimitPerSecond === null ? 'Unlimited' : w.rateLimitPerSecond.toLocaleString('en')],
            ['Description', w.description || '—'],
            ['Created', formatDate(w.createdAt)],
            ['ID', <code key="id">{w.id}</code>],
          ]}
        />
      </Card>
      <DeliveryLog webhookId={w.id} watchUntil={watchUntil} enabled={w.status === 'enabled'} />
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
      <SecretDialog
        open={rotated !== null}
        onDone={() => setRotated(null)}
        title="New signing secret"
        label="Signing secret"
        secret={rotated?.secret ?? ''}
        warning={rotated && `Deliveries are also signed with the old secret until ${formatDate(rotated.previousSecretExpiresAt)}. Update your receiver before then.`}
      />
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
