/**
 * The Explore page's query builder state, apart from React: the query it builds, the names of its measures,
 * what is wrong with it before it is sent, and how a URL carries it (Back and shared links).
 */
import { FILTER_OPERATORS, GRANULARITY_LIST, MEASURES, type Column, type FilterOp, type Granularity, type MeasureOp } from './api/types.ts';

export interface MeasureRow {
  op: MeasureOp;
  field: string;
  as: string;
}
export interface FilterRow {
  field: string;
  op: FilterOp;
  value: string;
}
export interface TimeRow {
  field: string;
  granularity: Granularity;
  from: string;
  to: string;
  /** IANA zone the buckets and the dates follow. */
  timezone: string;
  compareTo: '' | 'previousPeriod' | 'previousYear';
}

/** The browser's own zone: what a person means by "a day" here. */
export const BROWSER_ZONE = Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';

const NUMERIC = new Set(['integer', 'number']);

/** Which fields a measure can take: sums and percentiles need numbers; min/max also order text and time. */
export function fieldsFor(op: MeasureOp, schema: Column[]): Column[] {
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

export function filterValueProblem(f: FilterRow): string | undefined {
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
    time: t
      ? {
          field: str(t.field),
          granularity,
          from: str(t.from),
          to: str(t.to),
          timezone: str(t.timezone) || BROWSER_ZONE,
          compareTo: t.compareTo === 'previousPeriod' || t.compareTo === 'previousYear' ? t.compareTo : '',
        }
      : null,
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
export function nextMeasure(existing: MeasureRow[], schema: Column[]): MeasureRow {
  const numbers = fieldsFor('sum', schema);
  const taken = new Set(measureNames(existing));
  const field = numbers.find((c) => !taken.has(`sum_${c.name}`))?.name ?? numbers[0]?.name;
  return field ? { op: 'sum', field, as: '' } : { op: 'countDistinct', field: schema[0]?.name ?? '', as: '' };
}

/**
 * The builder state of a query as the API stores it (an insight's): the inverse of `buildQuery`, through the
 * same checks as a URL's. Null when it is not a query the builder can show.
 */
export function builderStateFromQuery(q: Record<string, unknown>): BuilderState | null {
  const td = isObject(q.timeDimension) ? q.timeDimension : null;
  const order = Array.isArray(q.orderBy) && isObject(q.orderBy[0]) ? q.orderBy[0] : null;
  const shape = {
    sourceId: q.sourceId,
    measures: Array.isArray(q.measures) ? q.measures.filter(isObject).map((m) => ({ op: m.op, field: str(m.field), as: str(m.as) })) : [],
    dimensions: q.dimensions,
    time: td
      ? {
          field: td.field,
          granularity: td.granularity,
          from: str(td.from),
          to: str(td.to),
          timezone: str(td.timezone),
          compareTo: typeof q.compareTo === 'string' ? q.compareTo : '',
        }
      : null,
    filters: Array.isArray(q.filters)
      ? q.filters
          .filter(isObject)
          .map((f) => ({ field: f.field, op: f.op, value: Array.isArray(f.value) ? f.value.map(String).join(', ') : f.value == null ? '' : String(f.value) }))
      : [],
    order: order ? { field: order.field, direction: order.direction } : null,
    limit: q.limit,
  };
  return decodeBuilderState(JSON.stringify(shape));
}
