import { useEffect, useMemo, useRef, useState, type FormEvent } from 'react';
import { ApiError, unwrap } from '../api/client.ts';
import {
  FILTER_OPERATORS,
  GRANULARITY_LIST,
  MEASURES,
  type FilterOp,
  type Granularity,
  type MeasureOp,
  type Page,
  type InsightDto,
  type QueryEstimateDto,
  type QueryResultDto,
  type SourceDto,
} from '../api/types.ts';
import { NameDialog, PinDialog } from '../components/insight-dialogs.tsx';
import { CHART_TYPES, ResultView, type ChartType } from '../components/result-view.tsx';
import { Badge, Button, ButtonLink, Card, CopyButton, EmptyState, ErrorBanner, Field, Loading, PageHeader } from '../components/ui.tsx';
import { useApi } from '../context.tsx';
import { formatMs, formatNumber } from '../format.ts';
import { useAction, useDocumentTitle, useResource } from '../hooks.ts';
import { Link, navigate, useLocation } from '../router.tsx';
import { runUnsaved } from '../source-series.ts';
import { insightExploreUrl } from './insights.tsx';
import {
  buildQuery,
  builderProblems,
  decodeBuilderState,
  exploreUrl,
  fieldsFor,
  filterValueProblem,
  measureNames,
  nextMeasure,
  BROWSER_ZONE,
  type BuilderState,
  type FilterRow,
  type MeasureRow,
  type TimeRow,
} from '../explore-state.ts';

export function ExplorePage() {
  useDocumentTitle('Explore');
  const api = useApi();
  const { search, href } = useLocation();
  const urlQuery = search.get('q');
  const urlChart = search.get('chart');
  const chartType = (CHART_TYPES as readonly string[]).includes(urlChart ?? '') ? (urlChart as ChartType) : null;
  // An insight opened from the Insights page or a dashboard: Save updates it.
  const urlInsight = search.get('insight');
  const insight = useResource<InsightDto>(urlInsight ? `insight:${urlInsight}` : null, (a, signal) =>
    unwrap(a.openapi.GET('/analytics/insights/{id}', { params: { path: { id: urlInsight! } }, signal })),
  );
  const openInsight = urlInsight && insight.data?.id === urlInsight ? insight.data : null;
  const sources = useResource<Page<SourceDto>>('sources', (a, signal) => unwrap(a.openapi.GET('/sources', { params: { query: { limit: 100 } }, signal })));
  const ready = useMemo(() => (sources.data?.data ?? []).filter((s) => s.status === 'ready'), [sources.data]);

  const [sourceId, setSourceId] = useState<string>(search.get('source') ?? '');
  const [measures, setMeasures] = useState<MeasureRow[]>([{ op: 'count', field: '', as: '' }]);
  const [dimensions, setDimensions] = useState<string[]>([]);
  const [time, setTime] = useState<TimeRow | null>(null);
  const [filters, setFilters] = useState<FilterRow[]>([]);
  const [order, setOrder] = useState<{ field: string; direction: 'asc' | 'desc' } | null>(null);
  const [limit, setLimit] = useState(1000);
  const [report, setReport] = useState<QueryResultDto | null>(null);
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

  const current: BuilderState = { sourceId, measures, dimensions, time, filters, order, limit };
  const query = source ? buildQuery(current, schema) : null;
  const names = measureNames(measures);

  const run = useAction(async (st: BuilderState) => {
    const from = ready.find((s) => s.id === st.sourceId);
    if (!from) throw new ApiError({ status: 400, code: 'validation_failed', title: 'Choose a source first', detail: '' });
    const problems = builderProblems(st);
    if (problems.length) throw new ApiError({ status: 400, code: 'validation_failed', title: 'Check the highlighted fields', detail: '', errors: problems });
    setReport(null);
    // Exploring stores nothing: a report is saved only when asked (Save as report), an insight when named.
    const answered = await runUnsaved(api, buildQuery(st, from.schema ?? []));
    setReport(answered);
    return answered;
  });

  // The URL holds the last query run: opening it (a shared link, Back, Forward) puts that query in the
  // builder and runs it; an address without one empties the builder.
  const applied = useRef<string | null | undefined>(undefined);
  useEffect(() => {
    if (!sources.data || applied.current === urlQuery) return;
    const before = applied.current;
    applied.current = urlQuery;
    const st = decodeBuilderState(urlQuery);
    if (!st) {
      if (before) resetFor(sourceId);
      return;
    }
    setSourceId(st.sourceId);
    setMeasures(st.measures);
    setDimensions(st.dimensions);
    setTime(st.time);
    setFilters(st.filters);
    setOrder(st.order);
    setLimit(st.limit);
    void run.run(st);
    // Runs when the URL's query changes (or the sources arrive), not on every edit of the builder.
  }, [urlQuery, sources.data]);

  const submit = (e: FormEvent) => {
    e.preventDefault();
    const problems = builderProblems(current);
    if (problems.length) return run.setError(new ApiError({ status: 400, code: 'validation_failed', title: 'Check the highlighted fields', detail: '', errors: problems }));
    // An open insight stays open across runs, so Save still updates it.
    const url = exploreUrl(current, urlChart) + (urlInsight ? `&insight=${encodeURIComponent(urlInsight)}` : '');
    // The same query again (a retry) stays on this history entry; a new one is a new entry, so Back returns to the last.
    if (url === href) void run.run(current);
    else navigate(url, { keepScroll: true });
  };
  const setChartType = (t: ChartType) => {
    const params = new URLSearchParams(search);
    params.set('chart', t);
    navigate(`/analytics?${params.toString()}`, { replace: true, keepScroll: true });
  };

  // A dry run: what the query would read, against the plan's cap, without running it or saving a report.
  const [estimate, setEstimate] = useState<QueryEstimateDto | null>(null);
  const estimateRun = useAction(async () => {
    if (!query) return;
    setEstimate(null);
    const answered = await unwrap(api.openapi.POST('/analytics/query', { body: { ...query, dryRun: true } }));
    if (!('dryRun' in answered)) throw new Error('a dry run was answered with a report');
    setEstimate(answered);
  });

  // What Save stores as the insight's chart: the one chosen, else the one the result view picks by itself.
  const chartToSave: ChartType = chartType ?? (time ? 'line' : dimensions.length > 0 ? 'bar' : 'number');
  const [naming, setNaming] = useState(false);
  const [pinning, setPinning] = useState(false);
  const [notice, setNotice] = useState<{ text: string; to?: string; link?: string } | null>(null);
  const saveInsight = useAction(async () => {
    if (!openInsight || !query) return;
    const updated = await unwrap(api.openapi.PATCH('/analytics/insights/{id}', { params: { path: { id: openInsight.id } }, body: { query, chart: chartToSave } }));
    insight.setData(() => updated);
    setNotice({ text: `Saved “${updated.name}”.` });
  });
  const saveReport = useAction(async () => {
    if (!query) return;
    const answered = await unwrap(api.openapi.POST('/analytics/query', { body: { ...query, saveReport: true } }));
    if (!('id' in answered)) throw new Error('a saved run was answered without a report');
    navigate(`/analytics/reports/${answered.id}`);
  });

  const err = run.error ?? estimateRun.error ?? saveInsight.error ?? saveReport.error;
  const outputs = [...(time ? [time.field] : []), ...dimensions, ...names];
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
        title={openInsight ? `Explore: ${openInsight.name}` : 'Explore'}
        description={
          openInsight
            ? 'Change the query and press Save to update this insight; its dashboard tiles show the change.'
            : 'Build a query, see it as a chart and a table. Runs here are not stored: save the query as an insight, or as a report to download.'
        }
        actions={
          <>
            <ButtonLink to="/analytics/insights">Insights</ButtonLink>
            <ButtonLink to="/analytics/reports">Reports</ButtonLink>
          </>
        }
      />
      {notice && (
        <p className="muted" role="status">
          {notice.text} {notice.to && <Link to={notice.to}>{notice.link}</Link>}
        </p>
      )}
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
                        onChange={(ev) => {
                          setMeasures((old) => old.map((x, j) => (j === i ? { ...x, field: ev.target.value } : x)));
                          run.fixField(`measures.${i}.field`, spec.needsField && !ev.target.value ? 'Choose a field for this measure' : undefined);
                        }}
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
                        placeholder={measureNames(measures.map((x, j) => (j === i ? { ...x, as: '' } : x)))[i]}
                        value={m.as}
                        aria-invalid={err?.fieldError(`measures.${i}.as`) ? true : undefined}
                        onChange={(ev) => {
                          setMeasures((old) => old.map((x, j) => (j === i ? { ...x, as: ev.target.value } : x)));
                          run.fixField(`measures.${i}.as`);
                        }}
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
                <Button size="sm" variant="ghost" onClick={() => setMeasures((old) => [...old, nextMeasure(old, schema)])} disabled={measures.length >= 20}>
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
                        onChange={(ev) => {
                          setFilters((old) => old.map((x, j) => (j === i ? { ...x, op: ev.target.value as FilterOp } : x)));
                          run.fixField(`filters.${i}.value`, filterValueProblem({ ...f, op: ev.target.value as FilterOp }));
                        }}
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
                          onChange={(ev) => {
                            setFilters((old) => old.map((x, j) => (j === i ? { ...x, value: ev.target.value } : x)));
                            run.fixField(`filters.${i}.value`, filterValueProblem({ ...f, value: ev.target.value }));
                          }}
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
              query && (
                <>
                  {openInsight && (
                    <Button size="sm" variant="primary" loading={saveInsight.pending} onClick={() => void saveInsight.run()}>
                      Save
                    </Button>
                  )}
                  <Button size="sm" variant={openInsight ? 'secondary' : 'primary'} onClick={() => setNaming(true)}>
                    {openInsight ? 'Save as new insight' : 'Save as insight'}
                  </Button>
                  {openInsight && (
                    <Button size="sm" onClick={() => setPinning(true)}>
                      Add to dashboard
                    </Button>
                  )}
                  <Button size="sm" variant="ghost" loading={saveReport.pending} onClick={() => void saveReport.run()}>
                    Save as report
                  </Button>
                </>
              )
            }
          >
            <ErrorBanner error={err} title={err && err.fieldErrors.length ? 'The query has problems' : undefined} />
            {run.pending ? (
              <Loading label="Running the query…" rows={5} />
            ) : report ? (
              <>
                <p className="result-meta">
                  <Badge>{formatNumber(report.rowCount)} rows</Badge>
                  <Badge>{formatMs(report.durationMs)}</Badge>
                </p>
                <ResultView report={report} chartType={chartType} onChartType={setChartType} />
              </>
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
      <NameDialog
        open={naming}
        title={openInsight ? 'Save as a new insight' : 'Save as insight'}
        label="Name"
        initial={openInsight ? `${openInsight.name} (copy)` : ''}
        confirmLabel="Save insight"
        onClose={() => setNaming(false)}
        onSubmit={async (name) => {
          if (!query) return;
          const created = await unwrap(api.openapi.POST('/analytics/insights', { body: { name, query, chart: chartToSave } }));
          insight.setData(() => created);
          // The insight is open now: Save updates it, and Add to dashboard pins it.
          navigate(insightExploreUrl(created), { replace: true, keepScroll: true });
          setNotice({ text: `Saved “${created.name}”.`, to: '/analytics/insights', link: 'All insights' });
        }}
      />
      <PinDialog
        open={pinning}
        insightId={openInsight?.id ?? null}
        onClose={() => setPinning(false)}
        onPinned={(d) => setNotice({ text: `Added to “${d.name}”.`, to: `/analytics/dashboards/${d.id}`, link: 'Open the dashboard' })}
      />
    </>
  );
}
