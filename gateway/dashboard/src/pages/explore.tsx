import { useEffect, useMemo, useRef, useState, type FormEvent } from 'react';
import { ApiError, unwrap } from '../api/client.ts';
import {
  FILTER_OPERATORS,
  GRANULARITY_LIST,
  MEASURES,
  type Column,
  type FilterOp,
  type Granularity,
  type MeasureOp,
  type Page,
  type QueryEstimateDto,
  type ReportDto,
  type SourceDto,
} from '../api/types.ts';
import { ResultView } from '../components/result-view.tsx';
import { Badge, Button, ButtonLink, Card, CopyButton, EmptyState, ErrorBanner, Field, Loading, PageHeader, StatusBadge } from '../components/ui.tsx';
import { useApi } from '../context.tsx';
import { formatMs, formatNumber } from '../format.ts';
import { useAction, useDocumentTitle, useResource } from '../hooks.ts';
import { Link, useLocation } from '../router.tsx';

interface MeasureRow {
  op: MeasureOp;
  field: string;
  as: string;
}
interface FilterRow {
  field: string;
  op: FilterOp;
  value: string;
}
interface TimeRow {
  field: string;
  granularity: Granularity;
  from: string;
  to: string;
  /** IANA zone the buckets and the dates follow. */
  timezone: string;
  compareTo: '' | 'previousPeriod' | 'previousYear';
}

/** The browser's own zone: what a person means by "a day" here. */
const BROWSER_ZONE = Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';

const NUMERIC = new Set(['integer', 'number']);

/** Which fields a measure can take: sums and percentiles need numbers; min/max also order text and time. */
function fieldsFor(op: MeasureOp, schema: Column[]): Column[] {
  const spec = MEASURES.find((m) => m.op === op)!;
  if (spec.numeric) return schema.filter((c) => NUMERIC.has(c.type));
  if (op === 'min' || op === 'max') return schema.filter((c) => c.type !== 'boolean');
  return schema;
}

function typedValue(raw: string, type: string | undefined): string | number | boolean | null {
  const v = raw.trim();
  if (type && NUMERIC.has(type) && v !== '' && Number.isFinite(Number(v))) return Number(v);
  if (type === 'boolean' && (v === 'true' || v === 'false')) return v === 'true';
  return v;
}

export function buildQuery(
  state: {
    sourceId: string;
    measures: MeasureRow[];
    dimensions: string[];
    time: TimeRow | null;
    filters: FilterRow[];
    order: { field: string; direction: 'asc' | 'desc' } | null;
    limit: number;
  },
  schema: Column[],
) {
  const typeOf = (f: string) => schema.find((c) => c.name === f)?.type;
  return {
    sourceId: state.sourceId,
    measures: state.measures.map((m) => ({ op: m.op, ...(m.field ? { field: m.field } : {}), ...(m.as.trim() ? { as: m.as.trim() } : {}) })),
    dimensions: state.dimensions,
    ...(state.time
      ? {
          timeDimension: {
            field: state.time.field,
            granularity: state.time.granularity,
            timezone: state.time.timezone,
            // Dates without an offset: local midnight in the zone.
            ...(state.time.from ? { from: state.time.from } : {}),
            ...(state.time.to ? { to: state.time.to } : {}),
          },
          ...(state.time.compareTo && state.time.from && state.time.to ? { compareTo: state.time.compareTo } : {}),
        }
      : {}),
    filters: state.filters.map((f) => {
      const kind = FILTER_OPERATORS.find((o) => o.op === f.op)!.value;
      if (kind === 'none') return { field: f.field, op: f.op };
      if (kind === 'list')
        return {
          field: f.field,
          op: f.op,
          value: f.value
            .split(',')
            .map((x) => typedValue(x, typeOf(f.field)))
            .filter((x) => x !== ''),
        };
      return { field: f.field, op: f.op, value: typedValue(f.value, typeOf(f.field)) };
    }),
    orderBy: state.order ? [state.order] : [],
    limit: state.limit,
  };
}

const outputName = (m: MeasureRow) => m.as.trim() || (m.field ? `${m.op}_${m.field}` : m.op);

export function ExplorePage() {
  useDocumentTitle('Explore');
  const api = useApi();
  const { search } = useLocation();
  const sources = useResource<Page<SourceDto>>('sources', (a, signal) => unwrap(a.openapi.GET('/sources', { params: { query: { limit: 100 } }, signal })));
  const ready = useMemo(() => (sources.data?.data ?? []).filter((s) => s.status === 'ready'), [sources.data]);

  const [sourceId, setSourceId] = useState<string>(search.get('source') ?? '');
  const [measures, setMeasures] = useState<MeasureRow[]>([{ op: 'count', field: '', as: '' }]);
  const [dimensions, setDimensions] = useState<string[]>([]);
  const [time, setTime] = useState<TimeRow | null>(null);
  const [filters, setFilters] = useState<FilterRow[]>([]);
  const [order, setOrder] = useState<{ field: string; direction: 'asc' | 'desc' } | null>(null);
  const [limit, setLimit] = useState(1000);
  const [report, setReport] = useState<ReportDto | null>(null);
  const resultsRef = useRef<HTMLElement>(null);

  // On a narrow screen the results sit below the builder: bring them into view when they arrive.
  useEffect(() => {
    if (report && window.matchMedia('(max-width: 1100px)').matches) resultsRef.current?.scrollIntoView({ block: 'start' });
  }, [report]);

  useEffect(() => {
    if (!sourceId && ready[0]) setSourceId(ready[0].id);
  }, [ready, sourceId]);

  const source = ready.find((s) => s.id === sourceId);
  const schema = source?.schema ?? [];
  // Only timestamp columns: the API refuses a string column as the time dimension (see services/analytics/README.md).
  const timeFields = schema.filter((c) => c.type === 'timestamp');
  const dimensionFields = schema.filter((c) => c.name !== time?.field);

  const resetFor = (id: string) => {
    setSourceId(id);
    setMeasures([{ op: 'count', field: '', as: '' }]);
    setDimensions([]);
    setTime(null);
    setFilters([]);
    setOrder(null);
    setReport(null);
    run.setError(null);
  };

  const query = source ? buildQuery({ sourceId, measures, dimensions, time, filters, order, limit }, schema) : null;

  const run = useAction(async () => {
    if (!query) throw new ApiError({ status: 400, code: 'validation_failed', title: 'Choose a source first', detail: '' });
    const bad = measures.findIndex((m) => MEASURES.find((x) => x.op === m.op)!.needsField && !m.field);
    if (bad >= 0)
      throw new ApiError({
        status: 400,
        code: 'validation_failed',
        title: 'Check the highlighted fields',
        detail: '',
        errors: [{ path: `measures.${bad}.field`, message: 'Choose a field for this measure' }],
      });
    setReport(null);
    const answer = await api.openapi.POST('/analytics/query', { body: query });
    // Not a dry run, so the answer is a report (a dry run's estimate is the other 2xx body).
    let body = (await unwrap(Promise.resolve(answer))) as ReportDto;
    let status = answer.response.status;
    // A slow query answers 202 and finishes in the background: poll its report.
    for (let i = 0; status === 202 || body.status === 'running'; i++) {
      await new Promise((r) => setTimeout(r, Math.min(2_000, 400 + i * 200)));
      body = await unwrap(api.openapi.GET('/analytics/reports/{id}', { params: { path: { id: body.id } } }));
      status = 200;
    }
    setReport(body);
    return body;
  });

  // A dry run: what the query would read, against the plan's cap, without running it or saving a report.
  const [estimate, setEstimate] = useState<QueryEstimateDto | null>(null);
  const estimateRun = useAction(async () => {
    if (!query) return;
    setEstimate(null);
    setEstimate((await unwrap(api.openapi.POST('/analytics/query', { body: { ...query, dryRun: true } }))) as QueryEstimateDto);
  });

  const submit = (e: FormEvent) => {
    e.preventDefault();
    void run.run();
  };

  const err = run.error ?? estimateRun.error;
  const outputs = [...(time ? [time.field] : []), ...dimensions, ...measures.map(outputName)];
  const curl = query
    ? `curl -X POST ${window.location.origin}/v1/analytics/query \\\n  -H "Authorization: Bearer $API_KEY" \\\n  -H "Content-Type: application/json" \\\n  -d '${JSON.stringify(query)}'`
    : '';

  if (sources.data && ready.length === 0) {
    return (
      <>
        <PageHeader title="Explore" description="Build a query, see it as a chart and a table, and save it as a report." />
        <Card>
          <EmptyState
            title="No ready source yet"
            icon="📊"
            action={
              <ButtonLink to="/sources/new" variant="primary">
                Connect a source
              </ButtonLink>
            }
          >
            {(sources.data.data.length ?? 0) > 0 ? 'Your sources are still syncing; come back in a moment.' : 'Connect some data first, then come back to query it.'}
          </EmptyState>
        </Card>
      </>
    );
  }

  return (
    <>
      <PageHeader
        title="Explore"
        description="Build a query, see it as a chart and a table. Every query is saved as a report."
        actions={<ButtonLink to="/analytics/reports">All reports</ButtonLink>}
      />
      <ErrorBanner error={sources.error} onRetry={() => void sources.reload()} />
      <div className="explore">
        <form className="builder card" onSubmit={submit} noValidate aria-label="Query builder">
          {!sources.data ? (
            <Loading rows={4} />
          ) : (
            <>
              <Field label="Source" error={err?.fieldError('sourceId')}>
                {(p) => (
                  <select {...p} className="input" value={sourceId} onChange={(e) => resetFor(e.target.value)}>
                    {ready.map((s) => (
                      <option key={s.id} value={s.id}>
                        {s.name} ({formatNumber(s.rowCount)} rows)
                      </option>
                    ))}
                  </select>
                )}
              </Field>

              <fieldset className="fieldset builder-section">
                <legend className="section-title">Measures</legend>
                {measures.map((m, i) => {
                  const spec = MEASURES.find((x) => x.op === m.op)!;
                  const options = fieldsFor(m.op, schema);
                  const e = err?.fieldError(`measures.${i}`);
                  return (
                    <div key={i} className={`builder-row${e ? ' field-invalid' : ''}`}>
                      <select
                        className="input"
                        aria-label={`Measure ${i + 1} operation`}
                        value={m.op}
                        onChange={(ev) =>
                          setMeasures((old) =>
                            old.map((x, j) =>
                              j === i
                                ? { ...x, op: ev.target.value as MeasureOp, field: fieldsFor(ev.target.value as MeasureOp, schema).some((c) => c.name === x.field) ? x.field : '' }
                                : x,
                            ),
                          )
                        }
                      >
                        {MEASURES.map((o) => (
                          <option key={o.op} value={o.op}>
                            {o.label}
                          </option>
                        ))}
                      </select>
                      <select
                        className="input"
                        aria-label={`Measure ${i + 1} field`}
                        aria-invalid={e ? true : undefined}
                        value={m.field}
                        onChange={(ev) => setMeasures((old) => old.map((x, j) => (j === i ? { ...x, field: ev.target.value } : x)))}
                      >
                        <option value="">{spec.needsField ? 'Choose a field…' : 'all rows'}</option>
                        {options.map((c) => (
                          <option key={c.name} value={c.name}>
                            {c.name}
                          </option>
                        ))}
                      </select>
                      <input
                        className="input"
                        aria-label={`Measure ${i + 1} name (optional)`}
                        placeholder={outputName({ ...m, as: '' })}
                        value={m.as}
                        onChange={(ev) => setMeasures((old) => old.map((x, j) => (j === i ? { ...x, as: ev.target.value } : x)))}
                      />
                      <button
                        type="button"
                        className="icon-btn"
                        aria-label={`Remove measure ${i + 1}`}
                        disabled={measures.length === 1}
                        onClick={() => setMeasures((old) => old.filter((_, j) => j !== i))}
                      >
                        ×
                      </button>
                      {e && <p className="field-error builder-error">⚠ {e}</p>}
                    </div>
                  );
                })}
                <Button
                  size="sm"
                  variant="ghost"
                  onClick={() => setMeasures((old) => [...old, { op: 'sum', field: fieldsFor('sum', schema)[0]?.name ?? '', as: '' }])}
                  disabled={measures.length >= 20}
                >
                  + Add measure
                </Button>
              </fieldset>

              <fieldset className="fieldset builder-section">
                <legend className="section-title">Group by</legend>
                {dimensionFields.length === 0 ? (
                  <p className="muted small">No fields to group by.</p>
                ) : (
                  <div className="chips">
                    {dimensionFields.map((c, i) => {
                      const checked = dimensions.includes(c.name);
                      const e = err?.fieldError(`dimensions.${dimensions.indexOf(c.name)}`);
                      return (
                        <label key={c.name} className={`chip${checked ? ' is-checked' : ''}${e && checked ? ' field-invalid' : ''}`} data-index={i}>
                          <input type="checkbox" checked={checked} onChange={() => setDimensions((old) => (checked ? old.filter((d) => d !== c.name) : [...old, c.name]))} />
                          {c.name}
                          <span className="chip-type">{c.type}</span>
                        </label>
                      );
                    })}
                  </div>
                )}
                {err?.fieldError('dimensions') && <p className="field-error">⚠ {err.fieldError('dimensions')}</p>}
              </fieldset>

              <fieldset className="fieldset builder-section">
                <legend className="section-title">Over time</legend>
                {timeFields.length === 0 ? (
                  <p className="muted small">This source has no time field.</p>
                ) : (
                  <>
                    <div className="builder-row builder-row-2">
                      <select
                        className="input"
                        aria-label="Time field"
                        value={time?.field ?? ''}
                        onChange={(e) => {
                          const field = e.target.value;
                          setTime(
                            field
                              ? {
                                  field,
                                  granularity: time?.granularity ?? 'day',
                                  from: time?.from ?? '',
                                  to: time?.to ?? '',
                                  timezone: time?.timezone ?? BROWSER_ZONE,
                                  compareTo: time?.compareTo ?? '',
                                }
                              : null,
                          );
                          if (field) setDimensions((old) => old.filter((d) => d !== field));
                        }}
                      >
                        <option value="">No time dimension</option>
                        {timeFields.map((c) => (
                          <option key={c.name} value={c.name}>
                            {c.name}
                          </option>
                        ))}
                      </select>
                      <select
                        className="input"
                        aria-label="Time granularity"
                        value={time?.granularity ?? 'day'}
                        disabled={!time}
                        onChange={(e) => time && setTime({ ...time, granularity: e.target.value as Granularity })}
                      >
                        {GRANULARITY_LIST.map((g) => (
                          <option key={g} value={g}>
                            by {g}
                          </option>
                        ))}
                      </select>
                    </div>
                    {time && (
                      <div className="builder-row builder-row-2">
                        <Field label="From" error={err?.fieldError('timeDimension.from')}>
                          {(p) => <input {...p} type="date" className="input" value={time.from} onChange={(e) => setTime({ ...time, from: e.target.value })} />}
                        </Field>
                        <Field label="Until (not included)" error={err?.fieldError('timeDimension.to')}>
                          {(p) => <input {...p} type="date" className="input" value={time.to} onChange={(e) => setTime({ ...time, to: e.target.value })} />}
                        </Field>
                      </div>
                    )}
                    {time && (
                      <div className="builder-row builder-row-2">
                        <Field label="Time zone" error={err?.fieldError('timeDimension.timezone')}>
                          {(p) => (
                            <input
                              {...p}
                              className="input"
                              value={time.timezone}
                              placeholder="Europe/Berlin"
                              onChange={(e) => setTime({ ...time, timezone: e.target.value.trim() })}
                            />
                          )}
                        </Field>
                        <Field label="Compare with" error={err?.fieldError('compareTo')}>
                          {(p) => (
                            <select
                              {...p}
                              className="input"
                              value={time.compareTo}
                              disabled={!time.from || !time.to}
                              onChange={(e) => setTime({ ...time, compareTo: e.target.value as TimeRow['compareTo'] })}
                            >
                              <option value="">Nothing</option>
                              <option value="previousPeriod">The period before</option>
                              <option value="previousYear">The same dates a year before</option>
                            </select>
                          )}
                        </Field>
                      </div>
                    )}
                    {err?.fieldError('timeDimension.field') && <p className="field-error">⚠ {err.fieldError('timeDimension.field')}</p>}
                  </>
                )}
              </fieldset>

              <fieldset className="fieldset builder-section">
                <legend className="section-title">Filters</legend>
                {filters.map((f, i) => {
                  const kind = FILTER_OPERATORS.find((o) => o.op === f.op)!.value;
                  const e = err?.fieldError(`filters.${i}`);
                  return (
                    <div key={i} className={`builder-row${e ? ' field-invalid' : ''}`}>
                      <select
                        className="input"
                        aria-label={`Filter ${i + 1} field`}
                        value={f.field}
                        onChange={(ev) => setFilters((old) => old.map((x, j) => (j === i ? { ...x, field: ev.target.value } : x)))}
                      >
                        {schema.map((c) => (
                          <option key={c.name} value={c.name}>
                            {c.name}
                          </option>
                        ))}
                      </select>
                      <select
                        className="input"
                        aria-label={`Filter ${i + 1} operator`}
                        value={f.op}
                        onChange={(ev) => setFilters((old) => old.map((x, j) => (j === i ? { ...x, op: ev.target.value as FilterOp } : x)))}
                      >
                        {FILTER_OPERATORS.map((o) => (
                          <option key={o.op} value={o.op}>
                            {o.label}
                          </option>
                        ))}
                      </select>
                      {kind === 'none' ? (
                        <span />
                      ) : (
                        <input
                          className="input"
                          aria-label={`Filter ${i + 1} value`}
                          aria-invalid={e ? true : undefined}
                          placeholder={kind === 'list' ? 'a, b, c' : 'value'}
                          value={f.value}
                          onChange={(ev) => setFilters((old) => old.map((x, j) => (j === i ? { ...x, value: ev.target.value } : x)))}
                        />
                      )}
                      <button type="button" className="icon-btn" aria-label={`Remove filter ${i + 1}`} onClick={() => setFilters((old) => old.filter((_, j) => j !== i))}>
                        ×
                      </button>
                      {e && <p className="field-error builder-error">⚠ {e}</p>}
                    </div>
                  );
                })}
                <Button
                  size="sm"
                  variant="ghost"
                  disabled={schema.length === 0 || filters.length >= 50}
                  onClick={() => setFilters((old) => [...old, { field: schema[0]?.name ?? '', op: 'eq', value: '' }])}
                >
                  + Add filter
                </Button>
              </fieldset>

              <fieldset className="fieldset builder-section">
                <legend className="section-title">Sort and limit</legend>
                <div className="builder-row builder-row-3">
                  <select
                    className="input"
                    aria-label="Sort by"
                    value={order?.field ?? ''}
                    onChange={(e) => setOrder(e.target.value ? { field: e.target.value, direction: order?.direction ?? 'desc' } : null)}
                  >
                    <option value="">Default order</option>
                    {outputs.map((o) => (
                      <option key={o} value={o}>
                        {o}
                      </option>
                    ))}
                  </select>
                  <select
                    className="input"
                    aria-label="Sort direction"
                    value={order?.direction ?? 'desc'}
                    disabled={!order}
                    onChange={(e) => order && setOrder({ ...order, direction: e.target.value as 'asc' | 'desc' })}
                  >
                    <option value="desc">Descending</option>
                    <option value="asc">Ascending</option>
                  </select>
                  <input
                    className="input"
                    type="number"
                    min={1}
                    max={10_000}
                    aria-label="Row limit"
                    value={limit}
                    onChange={(e) => setLimit(Math.max(1, Math.min(10_000, Number(e.target.value) || 1)))}
                  />
                </div>
                {err?.fieldError('orderBy') && <p className="field-error">⚠ {err.fieldError('orderBy')}</p>}
              </fieldset>

              <div className="builder-actions">
                <Button type="submit" variant="primary" loading={run.pending} className="btn-block">
                  Run query
                </Button>
                <Button type="button" loading={estimateRun.pending} className="btn-block" onClick={() => void estimateRun.run()}>
                  Estimate cost
                </Button>
              </div>
              {estimate && (
                <p className={estimate.limit.withinLimit ? 'muted small' : 'field-error'} aria-label="Estimate">
                  Reads {formatNumber(estimate.estimate.rowsRead)} rows, {formatNumber(Math.ceil(estimate.estimate.bytesRead / 1024))} KiB
                  {estimate.limit.maxBytesRead !== null &&
                    ` of the ${formatNumber(Math.floor(estimate.limit.maxBytesRead / 1024))} KiB a query may read on the ${estimate.limit.plan} plan`}
                  {estimate.limit.withinLimit ? '.' : ': over the limit; narrow the dates or use fewer fields.'}
                </p>
              )}
              {query && (
                <details className="query-json">
                  <summary>Use this query from the API</summary>
                  <pre className="code-block">
                    <code>{curl}</code>
                  </pre>
                  <CopyButton value={curl} label="Copy curl" size="sm" />
                </details>
              )}
            </>
          )}
        </form>

        <section ref={resultsRef} className="results" aria-label="Results" aria-busy={run.pending}>
          <Card
            title="Result"
            actions={
              report && (
                <>
                  <StatusBadge status={report.status} />
                  {report.status === 'completed' && (
                    <a className="btn btn-sm btn-secondary" href={`/v1/analytics/reports/${encodeURIComponent(report.id)}/export.csv`} download>
                      Download CSV
                    </a>
                  )}
                  <Link to={`/analytics/reports/${report.id}`} className="btn btn-sm btn-ghost">
                    Open report
                  </Link>
                </>
              )
            }
          >
            <ErrorBanner error={err} title={err && err.fieldErrors.length ? 'The query has problems' : undefined} />
            {run.pending ? (
              <Loading label="Running the query…" rows={5} />
            ) : report ? (
              report.status === 'failed' ? (
                <ErrorBanner error={new ApiError({ status: 422, code: 'report_failed', title: 'The query failed', detail: report.error ?? 'unknown error' })} />
              ) : (
                <>
                  <p className="result-meta">
                    <Badge>{formatNumber(report.rowCount)} rows</Badge>
                    <Badge>{formatMs(report.durationMs)}</Badge>
                    <span className="mono small muted">{report.id}</span>
                  </p>
                  <ResultView report={report} />
                </>
              )
            ) : (
              !err && (
                <EmptyState title="Run a query to see results" icon="▦">
                  Pick measures, group by a field or over time, then press <strong>Run query</strong>.
                </EmptyState>
              )
            )}
          </Card>
        </section>
      </div>
    </>
  );
}
