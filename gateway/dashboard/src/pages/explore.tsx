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
  type ReportDto,
  type SourceDto,
} from '../api/types.ts';
import { CHART_TYPES, ResultView, type ChartType } from '../components/result-view.tsx';
import { Badge, Button, ButtonLink, Card, CopyButton, EmptyState, ErrorBanner, Field, Loading, PageHeader, StatusBadge } from '../components/ui.tsx';
import { useApi } from '../context.tsx';
import { formatMs, formatNumber } from '../format.ts';
import { useAction, useDocumentTitle, useResource } from '../hooks.ts';
import { Link, navigate, useLocation } from '../router.tsx';

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
}

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

const toIso = (local: string) => (local ? new Date(`${local}T00:00:00Z`).toISOString() : undefined);

/** Everything the query builder holds: what the URL carries, so Back and a shared link bring the query back. */
export interface BuilderState {
  sourceId: string;
  measures: MeasureRow[];
  dimensions: string[];
  time: TimeRow | null;
  filters: FilterRow[];
  order: { field: string; direction: 'asc' | 'desc' } | null;
  limit: number;
}

/** The name the API gives a measure without `as`. */
const defaultName = (m: MeasureRow) => (m.field ? `${m.op}_${m.field}` : m.op);

/**
 * Each measure's output name: its own, or the API's default; a default that an earlier measure already
 * took gets a suffix (`sum_amount_2`), so every measure has a name of its own.
 */
export function measureNames(measures: MeasureRow[]): string[] {
  const used = new Set(measures.map((m) => m.as.trim()).filter(Boolean));
  return measures.map((m) => {
    if (m.as.trim()) return m.as.trim();
    const base = defaultName(m);
    let name = base;
    for (let k = 2; used.has(name); k++) name = `${base}_${k}`;
    used.add(name);
    return name;
  });
}

export function buildQuery(state: BuilderState, schema: Column[]) {
  const typeOf = (f: string) => schema.find((c) => c.name === f)?.type;
  const names = measureNames(state.measures);
  return {
    sourceId: state.sourceId,
    measures: state.measures.map((m, i) => ({ op: m.op, ...(m.field ? { field: m.field } : {}), ...(m.as.trim() || names[i] !== defaultName(m) ? { as: names[i]! } : {}) })),
    dimensions: state.dimensions,
    ...(state.time
      ? {
          timeDimension: {
            field: state.time.field,
            granularity: state.time.granularity,
            ...(state.time.from ? { from: toIso(state.time.from) } : {}),
            ...(state.time.to ? { to: toIso(state.time.to) } : {}),
          },
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

/** What is wrong with a query before it is sent: measures without their field, filters without a value. */
export function builderProblems(st: BuilderState): { path: string; message: string }[] {
  const problems: { path: string; message: string }[] = [];
  st.measures.forEach((m, i) => {
    if (MEASURES.find((x) => x.op === m.op)!.needsField && !m.field) problems.push({ path: `measures.${i}.field`, message: 'Choose a field for this measure' });
  });
  const names = measureNames(st.measures);
  names.forEach((n, i) => {
    if (names.indexOf(n) !== i) problems.push({ path: `measures.${i}.as`, message: `Another measure is already named “${n}”; give this one a name of its own` });
  });
  st.filters.forEach((f, i) => {
    const problem = filterValueProblem(f);
    if (problem) problems.push({ path: `filters.${i}.value`, message: problem });
  });
  return problems;
}

function filterValueProblem(f: FilterRow): string | undefined {
  const kind = FILTER_OPERATORS.find((o) => o.op === f.op)!.value;
  if (kind === 'one' && f.value.trim() === '') return 'Enter a value to compare with (or choose “is empty”)';
  if (kind === 'list' && !f.value.split(',').some((x) => x.trim() !== '')) return 'Enter one or more values, separated by commas';
  return undefined;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown) => (typeof v === 'string' ? v : '');

/** The builder state a URL carries (`?q=`), or null when it is not one (a hand-edited or truncated link). */
export function decodeBuilderState(raw: string | null): BuilderState | null {
  if (!raw) return null;
  let v: unknown;
  try {
    v = JSON.parse(raw);
  } catch {
    return null;
  }
  if (!isObject(v) || typeof v.sourceId !== 'string' || !Array.isArray(v.measures) || v.measures.length === 0) return null;
  const ops = new Set<string>(MEASURES.map((m) => m.op));
  const filterOps = new Set<string>(FILTER_OPERATORS.map((o) => o.op));
  const measures = v.measures.filter(isObject).map((m) => ({ op: (ops.has(str(m.op)) ? m.op : 'count') as MeasureOp, field: str(m.field), as: str(m.as) }));
  const t = isObject(v.time) && typeof v.time.field === 'string' ? v.time : null;
  const granularity = t && (GRANULARITY_LIST as readonly string[]).includes(str(t.granularity)) ? (t.granularity as Granularity) : 'day';
  const o = isObject(v.order) && typeof v.order.field === 'string' ? v.order : null;
  const limit = Number(v.limit);
  return {
    sourceId: v.sourceId,
    measures: measures.length ? measures : [{ op: 'count', field: '', as: '' }],
    dimensions: Array.isArray(v.dimensions) ? v.dimensions.filter((d): d is string => typeof d === 'string') : [],
    time: t ? { field: str(t.field), granularity, from: str(t.from), to: str(t.to) } : null,
    filters: Array.isArray(v.filters)
      ? v.filters.filter(isObject).map((f) => ({ field: str(f.field), op: (filterOps.has(str(f.op)) ? f.op : 'eq') as FilterOp, value: str(f.value) }))
      : [],
    order: o ? { field: str(o.field), direction: o.direction === 'asc' ? 'asc' : 'desc' } : null,
    limit: Number.isInteger(limit) && limit >= 1 && limit <= 10_000 ? limit : 1000,
  };
}

/** The Explore URL of a query (and the chart type chosen for it). */
export function exploreUrl(st: BuilderState, chart: string | null): string {
  const params = new URLSearchParams({ q: JSON.stringify(st) });
  if (chart) params.set('chart', chart);
  return `/analytics?${params.toString()}`;
}

/** A new measure: a sum over a number field that no measure sums yet (else the next free name of the first). */
function nextMeasure(existing: MeasureRow[], schema: Column[]): MeasureRow {
  const numbers = fieldsFor('sum', schema);
  const taken = new Set(measureNames(existing));
  const field = numbers.find((c) => !taken.has(`sum_${c.name}`))?.name ?? numbers[0]?.name;
  return field ? { op: 'sum', field, as: '' } : { op: 'countDistinct', field: schema[0]?.name ?? '', as: '' };
}

export function ExplorePage() {
  useDocumentTitle('Explore');
  const api = useApi();
  const { search, href } = useLocation();
  const urlQuery = search.get('q');
  const urlChart = search.get('chart');
  const chartType = (CHART_TYPES as readonly string[]).includes(urlChart ?? '') ? (urlChart as ChartType) : null;
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

  const current: BuilderState = { sourceId, measures, dimensions, time, filters, order, limit };
  const query = source ? buildQuery(current, schema) : null;
  const names = measureNames(measures);

  const run = useAction(async (st: BuilderState) => {
    const from = ready.find((s) => s.id === st.sourceId);
    if (!from) throw new ApiError({ status: 400, code: 'validation_failed', title: 'Choose a source first', detail: '' });
    const problems = builderProblems(st);
    if (problems.length) throw new ApiError({ status: 400, code: 'validation_failed', title: 'Check the highlighted fields', detail: '', errors: problems });
    setReport(null);
    const answer = await api.openapi.POST('/analytics/query', { body: buildQuery(st, from.schema ?? []) });
    let body: ReportDto = await unwrap(Promise.resolve(answer));
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
    const url = exploreUrl(current, urlChart);
    // The same query again (a retry) stays on this history entry; a new one is a new entry, so Back returns to the last.
    if (url === href) void run.run(current);
    else navigate(url, { keepScroll: true });
  };
  const setChartType = (t: ChartType) => {
    const params = new URLSearchParams(search);
    params.set('chart', t);
    navigate(`/analytics?${params.toString()}`, { replace: true, keepScroll: true });
  };

  const err = run.error;
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
                          setTime(field ? { field, granularity: time?.granularity ?? 'day', from: time?.from ?? '', to: time?.to ?? '' } : null);
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
                        <Field label="From (UTC)" error={err?.fieldError('timeDimension.from')}>
                          {(p) => <input {...p} type="date" className="input" value={time.from} onChange={(e) => setTime({ ...time, from: e.target.value })} />}
                        </Field>
                        <Field label="Until (UTC)" error={err?.fieldError('timeDimension.to')}>
                          {(p) => <input {...p} type="date" className="input" value={time.to} onChange={(e) => setTime({ ...time, to: e.target.value })} />}
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
              </div>
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
                  <ResultView report={report} chartType={chartType} onChartType={setChartType} />
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
