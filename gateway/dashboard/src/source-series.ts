/**
 * A time series taken from a source for the built-in forecast and anomaly models: one analytics query (a
 * measure of one column per time bucket, in UTC), made regular (one value per bucket, gaps filled), with
 * the buckets' start dates for the chart and the dates of the periods a forecast covers.
 */
import type { Column, Granularity, MeasureOp, QueryResultDto } from './api/types.ts';
import { ApiError, unwrap, type ApiClient, type RequestBodyOf } from './api/client.ts';
import { bucketEnd, parseTime } from './periods.ts';

type AnalyticsQuery = RequestBodyOf<'/analytics/query'>;

/** Aggregations a series can use: those whose result is a number for a numeric column. */
export const SERIES_OPS = ['sum', 'avg', 'count', 'min', 'max', 'median'] as const satisfies readonly MeasureOp[];
export type SeriesOp = (typeof SERIES_OPS)[number];
/** Aggregations for which a bucket without rows is a true 0 (the others have no value there). */
const ZERO_WHEN_EMPTY: ReadonlySet<SeriesOp> = new Set(['sum', 'count']);

export const MAX_SERIES_BUCKETS = 10_000;
const VALUE = 'value';

export interface SeriesSpec {
  sourceId: string;
  timeField: string;
  /** The numeric column; ignored by `count`. */
  column: string;
  op: SeriesOp;
  granularity: Granularity;
  /** How many of the latest whole buckets to take. */
  buckets: number;
}

export const timeColumns = (schema: readonly Column[]) => schema.filter((c) => c.type === 'timestamp');
export const numericColumns = (schema: readonly Column[]) => schema.filter((c) => c.type === 'number' || c.type === 'integer');

/** The newest buckets first (so a long history keeps its latest part); `toSeries` puts them in order. */
export function seriesQuery(spec: SeriesSpec): AnalyticsQuery {
  return {
    sourceId: spec.sourceId,
    measures: [spec.op === 'count' ? { op: 'count', as: VALUE } : { op: spec.op, field: spec.column, as: VALUE }],
    dimensions: [],
    timeDimension: { field: spec.timeField, granularity: spec.granularity, timezone: 'UTC', weekStartsOn: 1 },
    filters: [],
    orderBy: [{ field: spec.timeField, direction: 'desc' }],
    // One more than asked for: the newest bucket is dropped when its period has not ended.
    limit: Math.min(MAX_SERIES_BUCKETS, spec.buckets + 1),
  };
}

export interface SourceSeries {
  /** Bucket start instants (ISO, UTC), oldest first, one per bucket with no gaps. */
  dates: string[];
  values: number[];
  /** Buckets the data had no value for: 0 for sums and counts, else interpolated between their neighbours. */
  filled: number;
  /** The newest bucket was left out because its period had not ended (its value would be partial). */
  droppedPartial: boolean;
}

/**
 * A report's rows as a regular series: ordered, the still-running newest period dropped, missing buckets
 * filled (a forecast assumes evenly spaced values), cut to the newest `buckets`.
 */
export function toSeries(rows: readonly Record<string, unknown>[], spec: SeriesSpec, now = Date.now()): SourceSeries {
  const points = rows
    .map((r) => ({ at: parseTime(r[spec.timeField]), value: toNumber(r[VALUE]) }))
    .filter((p): p is { at: Date; value: number | null } => p.at !== null)
    .sort((a, b) => a.at.getTime() - b.at.getTime());
  let droppedPartial = false;
  const last = points[points.length - 1];
  if (last && bucketEnd(last.at, spec.granularity).getTime() > now) {
    points.pop();
    droppedPartial = true;
  }
  if (points.length === 0) return { dates: [], values: [], filled: 0, droppedPartial };
  const byTime = new Map(points.map((p) => [p.at.getTime(), p.value]));
  const dates: string[] = [];
  const raw: (number | null)[] = [];
  const end = points[points.length - 1]!.at.getTime();
  for (let t = points[0]!.at; t.getTime() <= end && dates.length <= MAX_SERIES_BUCKETS; t = bucketEnd(t, spec.granularity)) {
    dates.push(t.toISOString());
    raw.push(byTime.get(t.getTime()) ?? null);
  }
  // Filled before the cut, so a gap at the start of the kept part interpolates from the value before it.
  const { values } = fillGaps(raw, ZERO_WHEN_EMPTY.has(spec.op));
  const keep = Math.max(0, raw.length - spec.buckets);
  const filled = raw.slice(keep).filter((v) => v === null).length;
  return { dates: dates.slice(keep), values: values.slice(keep), filled, droppedPartial };
}

/** Missing values as 0, or linearly between the nearest known neighbours (the edges take the nearest one). */
export function fillGaps(values: readonly (number | null)[], zero: boolean): { values: number[]; filled: number } {
  let filled = 0;
  const known = values.flatMap((v, i) => (v === null ? [] : [i]));
  const out = values.map((v, i) => {
    if (v !== null) return v;
    filled++;
    if (zero || known.length === 0) return 0;
    const after = known.find((k) => k > i);
    const before = [...known].reverse().find((k) => k < i);
    if (before === undefined) return values[after!]!;
    if (after === undefined) return values[before]!;
    const a = values[before]!;
    const b = values[after]!;
    return a + ((b - a) * (i - before)) / (after - before);
  });
  return { values: out, filled };
}

/** The start dates of the `count` periods after `lastStart`. */
export function futureDates(lastStart: string, granularity: Granularity, count: number): string[] {
  const out: string[] = [];
  let t = new Date(lastStart);
  for (let i = 0; i < count; i++) {
    t = bucketEnd(t, granularity);
    out.push(t.toISOString());
  }
  return out;
}

/** A bucket's start as an axis label at its granularity: 2025-03-09 14:00, 2025-03-09, 2025-03, 2025. */
export function bucketLabel(iso: string, granularity: Granularity): string {
  const s = new Date(iso).toISOString();
  switch (granularity) {
    case 'hour':
      return `${s.slice(0, 10)} ${s.slice(11, 16)}`;
    case 'month':
      return s.slice(0, 7);
    case 'year':
      return s.slice(0, 4);
    default:
      return s.slice(0, 10);
  }
}

function toNumber(v: unknown): number | null {
  const n = typeof v === 'number' ? v : typeof v === 'string' && v.trim() !== '' ? Number(v) : NaN;
  return Number.isFinite(n) ? n : null;
}

/** Runs a query without storing a report (Explore, series for models): the answer carries the rows. */
export async function runUnsaved(api: ApiClient, query: AnalyticsQuery): Promise<QueryResultDto> {
  const answered = await unwrap(api.openapi.POST('/analytics/query', { body: { ...query, saveReport: false } }));
  if (!('saved' in answered)) throw new Error('a run without a report was answered with an estimate');
  return answered;
}

/** The series of a spec, or a 400-style error the form shows when there is too little of it. */
export async function loadSourceSeries(api: ApiClient, spec: SeriesSpec, minPoints: number): Promise<SourceSeries> {
  const result = await runUnsaved(api, seriesQuery(spec));
  const series = toSeries(result.rows, spec);
  if (series.values.length < minPoints) {
    throw new ApiError({
      status: 400,
      code: 'validation_failed',
      title: `The source has ${series.values.length} whole ${spec.granularity} period(s) of data; the model needs at least ${minPoints}`,
      detail: 'Pick a finer granularity or a source with a longer history.',
      errors: [{ path: 'series.granularity', message: `Only ${series.values.length} whole period(s) at this granularity` }],
    });
  }
  return series;
}
