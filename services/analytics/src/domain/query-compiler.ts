import { sqlIdent, type DatasetColumn } from '@dap/datasets';
import { withArticle, type AnalyticsQuery, type Filter } from '@dap/contracts';
import type { FieldError } from '@dap/errors';
import { queryInvalid } from './errors.ts';
import { comparedPeriod } from './compare.ts';
import { offsetSegments, parseInstant, sqlTimestamp } from './time-zone.ts';

/**
 * Compiles the analytics DSL to one parameterised DuckDB statement over a source's Parquet file.
 *
 * Safety: an identifier reaches the SQL only after it matched a column of the source's schema exactly, and
 * then only through `sqlIdent`; every value (the file path included) is a `$n` parameter; operators,
 * functions and granularities come from fixed tables below, never from the request.
 */

export type ParamValue = string | number | boolean | null;
export type ColumnType = DatasetColumn['type'];

export interface CompiledQuery {
  /** The page (LIMIT/OFFSET), with the number of all result rows as one more, last column. */
  sql: string;
  params: ParamValue[];
  /** Every result row in the page's order, without limit or offset (for exports); its parameters. */
  fullSql: string;
  fullParams: ParamValue[];
  /** The number of result rows, for a page past the end (it has no row to carry the count); takes `fullParams`. */
  countSql: string;
  /** Output columns in select order. */
  columns: { name: string; role: 'dimension' | 'time' | 'measure' }[];
  /** What the query reads: the source columns it uses, and the time field with the UTC ranges it keeps (null: all). */
  scan: { columns: string[]; timeField: string | null; ranges: ScanRange[] | null };
}

/** A half-open range of UTC instants in milliseconds; null is unbounded on that side. */
export interface ScanRange {
  from: number | null;
  to: number | null;
}

const MAX_PARAMS = 5_000;
const MAX_FILTER_NODES = 500;

const GRANULARITY_SQL: Readonly<Record<string, string>> = Object.freeze({
  hour: "'hour'",
  day: "'day'",
  week: "'week'",
  month: "'month'",
  year: "'year'",
});

type MeasureOp = AnalyticsQuery['measures'][number]['op'];
const NUMERIC: readonly ColumnType[] = ['integer', 'number'];
const ORDERED: readonly ColumnType[] = ['integer', 'number', 'timestamp', 'string'];

/** Week buckets start on these days (0 Sunday … 6 Saturday): 2000-01-02 was a Sunday. Monday is date_trunc's ISO week. */
const WEEK_ORIGIN: readonly string[] = Object.freeze(['2000-01-02', '2000-01-03', '2000-01-04', '2000-01-05', '2000-01-06', '2000-01-07', '2000-01-08']);

/** Measures whose value is a number whatever their field, so a change between periods can be computed. */
const ALWAYS_NUMERIC: ReadonlySet<MeasureOp> = new Set(['count', 'countDistinct', 'sum', 'avg', 'median', 'p90', 'p99']);

/** Which field types each measure accepts (null: any type), and its SQL shape. */
const MEASURES: Readonly<Record<MeasureOp, { needsField: boolean; types: readonly ColumnType[] | null; sql: (f: string) => string }>> = Object.freeze({
  count: { needsField: false, types: null, sql: (f) => (f ? `count(${f})` : 'count(*)') },
  countDistinct: { needsField: true, types: null, sql: (f) => `count(DISTINCT ${f})` },
  sum: { needsField: true, types: NUMERIC, sql: (f) => `sum(${f})` },
  avg: { needsField: true, types: NUMERIC, sql: (f) => `avg(${f})` },
  min: { needsField: true, types: ORDERED, sql: (f) => `min(${f})` },
  max: { needsField: true, types: ORDERED, sql: (f) => `max(${f})` },
  // Continuous quantiles (linear interpolation between the two nearest values), like numpy's default.
  median: { needsField: true, types: NUMERIC, sql: (f) => `quantile_cont(${f}, 0.5)` },
  p90: { needsField: true, types: NUMERIC, sql: (f) => `quantile_cont(${f}, 0.9)` },
  p99: { needsField: true, types: NUMERIC, sql: (f) => `quantile_cont(${f}, 0.99)` },
});

type FilterOp = Extract<Filter, { field: string }>['op'];
const COMPARISON_SQL: Readonly<Record<string, string>> = Object.freeze({ gt: '>', gte: '>=', lt: '<', lte: '<=' });
/** Which field types each filter operator accepts. */
const FILTER_TYPES: Readonly<Record<FilterOp, readonly ColumnType[]>> = Object.freeze({
  eq: ['string', 'integer', 'number', 'boolean', 'timestamp'],
  ne: ['string', 'integer', 'number', 'boolean', 'timestamp'],
  in: ['string', 'integer', 'number', 'boolean', 'timestamp'],
  notIn: ['string', 'integer', 'number', 'boolean', 'timestamp'],
  gt: ORDERED,
  gte: ORDERED,
  lt: ORDERED,
  lte: ORDERED,
  contains: ['string'],
  startsWith: ['string'],
  isNull: ['string', 'integer', 'number', 'boolean', 'timestamp'],
  isNotNull: ['string', 'integer', 'number', 'boolean', 'timestamp'],
});

const ISO_TIME = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?)?(?:Z|[+-]\d{2}:?\d{2})?$/;

/** An ISO-8601 time as the UTC `YYYY-MM-DD HH:MM:SS.mmm` DuckDB casts to TIMESTAMP, or null when invalid. */
export function toUtcTimestamp(value: string): string | null {
  if (!ISO_TIME.test(value)) return null;
  const v = value.replace(' ', 'T');
  // A time without a zone is UTC (JavaScript would read it as local time).
  const ms = Date.parse(v.length === 10 || /(?:Z|[+-]\d{2}:?\d{2})$/.test(v) ? v : `${v}Z`);
  if (Number.isNaN(ms)) return null;
  return new Date(ms).toISOString().replace('T', ' ').replace('Z', '');
}

/** The default output name of a measure: `count`, `sum_amount`, `countDistinct_user`. */
export function defaultAlias(op: MeasureOp, field: string | undefined): string {
  return field ? `${op}_${field}` : op;
}

/** A whole number as text, within HUGEINT's 38 digits (wider than any integer column). */
const INTEGER_TEXT = /^[+-]?\d{1,38}$/;

class Compiler {
  readonly errors: FieldError[] = [];
  readonly params: ParamValue[] = [];
  /** The source columns the query references, in first-use order. */
  readonly used = new Set<string>();
  private readonly fields: Map<string, ColumnType>;
  private filterNodes = 0;

  constructor(schema: readonly DatasetColumn[]) {
    this.fields = new Map(schema.map((c) => [c.name, c.type]));
  }

  fail(path: string, message: string): void {
    if (this.errors.length < 100) this.errors.push({ path, message });
  }

  param(value: ParamValue): string {
    this.params.push(value);
    return `$${this.params.length}`;
  }

  /** The field's type when it is one of the source's columns; records a 400 entry otherwise. */
  field(name: string, path: string): ColumnType | null {
    const type = this.fields.get(name);
    if (type === undefined) {
      const known = [...this.fields.keys()];
      const list =
        known
          .slice(0, 20)
          .map((k) => JSON.stringify(k))
          .join(', ') + (known.length > 20 ? ', …' : '');
      this.fail(path, `unknown field ${JSON.stringify(name)}: the source has no such column (its fields are ${list || 'none'})`);
      return null;
    }
    this.used.add(name);
    return type;
  }

  /** A column reference usable in comparisons; time-like columns compare as TIMESTAMP. */
  columnExpr(name: string, type: ColumnType): string {
    return type === 'timestamp' ? `CAST(${sqlIdent(name)} AS TIMESTAMP)` : sqlIdent(name);
  }

  /** A checked value as a parameter placeholder, or null (with an error) when its type does not fit. */
  value(v: unknown, type: ColumnType, path: string, opName: string): string | null {
    const bad = (expected: string) => {
      this.fail(path, `${opName} on ${type === 'integer' ? 'an' : 'a'} ${type} field needs ${expected}, got ${v === null ? 'null' : typeof v}`);
      return null;
    };
    switch (type) {
      case 'integer':
      case 'number': {
        // Results give integers beyond 2^53 as strings of digits (a JSON number cannot hold them): the
        // same text selects them, compared exactly.
        if (type === 'integer' && typeof v === 'string' && INTEGER_TEXT.test(v)) return `CAST(${this.param(v)} AS HUGEINT)`;
        if (typeof v !== 'number' || !Number.isFinite(v)) return bad(type === 'integer' ? 'a number or a string of digits' : 'a number');
        // The driver binds a whole JavaScript number as a 64-bit integer, which 1e300 does not fit: past 2^53
        // (where a JSON number is no longer exact anyway) the value is compared as the double it is.
        return Number.isInteger(v) && !Number.isSafeInteger(v) ? `CAST(${this.param(String(v))} AS DOUBLE)` : this.param(v);
      }
      case 'boolean':
        return typeof v === 'boolean' ? this.param(v) : bad('true or false');
      case 'string':
        return typeof v === 'string' ? this.param(v) : bad('a string');
      case 'timestamp': {
        if (typeof v !== 'string') return bad('an ISO-8601 time string');
        const ts = toUtcTimestamp(v);
        if (ts === null) {
          this.fail(path, `${opName} on a timestamp field needs an ISO-8601 time such as 2024-01-31T12:00:00Z, got ${JSON.stringify(v.slice(0, 50))}`);
          return null;
        }
        return `CAST(${this.param(ts)} AS TIMESTAMP)`;
      }
    }
  }

  filter(f: Filter, path: string, depth: number): string | null {
    if (++this.filterNodes > MAX_FILTER_NODES) {
      if (this.filterNodes === MAX_FILTER_NODES + 1) this.fail(path, `a query may have at most ${MAX_FILTER_NODES} filter conditions`);
      return null;
    }
    if (depth > 10) {
      this.fail(path, 'filters nest at most 10 levels deep');
      return null;
    }
    if ('and' in f || 'or' in f) {
      const [joiner, items] = 'and' in f ? (['AND', f.and] as const) : (['OR', f.or] as const);
      const key = joiner === 'AND' ? 'and' : 'or';
      if (!Array.isArray(items) || items.length === 0) {
        this.fail(`${path}.${key}`, `${key} needs at least one condition`);
        return null;
      }
      const parts = items.map((item, i) => this.filter(item, `${path}.${key}.${i}`, depth + 1));
      return parts.every((p) => p !== null) ? `(${parts.join(` ${joiner} `)})` : null;
    }
    const op = f.op;
    const allowed = FILTER_TYPES[op];
    if (!allowed) {
      this.fail(`${path}.op`, `unknown filter operator ${JSON.stringify(op)}`);
      return null;
    }
    const type = this.field(f.field, `${path}.field`);
    if (type === null) return null;
    if (!allowed.includes(type)) {
      this.fail(`${path}.op`, `${op} cannot be used on ${JSON.stringify(f.field)}, ${withArticle(type)} field (it works on ${allowed.join(', ')} fields)`);
      return null;
    }
    const col = this.columnExpr(f.field, type);
    const v = f.value;
    switch (op) {
      case 'isNull':
      case 'isNotNull':
        if (v !== undefined && v !== null) {
          this.fail(`${path}.value`, `${op} takes no value`);
          return null;
        }
        return `${col} IS ${op === 'isNull' ? '' : 'NOT '}NULL`;
      case 'in':
      case 'notIn': {
        if (!Array.isArray(v) || v.length === 0) {
          this.fail(`${path}.value`, `${op} needs a non-empty array of values`);
          return null;
        }
        const ps = v.map((item, i) => this.value(item, type, `${path}.value.${i}`, op));
        if (ps.some((p) => p === null)) return null;
        // notIn keeps rows whose field is null: "not one of these" is true of a missing value.
        return op === 'in' ? `${col} IN (${ps.join(', ')})` : `(${col} IS NULL OR ${col} NOT IN (${ps.join(', ')}))`;
      }
      default: {
        if (v === undefined || v === null || Array.isArray(v)) {
          const hint = v === null ? '; use isNull or isNotNull to test for null' : '';
          this.fail(`${path}.value`, `${op} needs a single value${hint}`);
          return null;
        }
        const p = this.value(v, type, `${path}.value`, op);
        if (p === null) return null;
        if (op === 'eq') return `${col} = ${p}`;
        // ne keeps rows whose field is null, like notIn.
        if (op === 'ne') return `${col} IS DISTINCT FROM ${p}`;
        if (op === 'contains') return `contains(${col}, ${p})`;
        if (op === 'startsWith') return `starts_with(${col}, ${p})`;
        const cmp = COMPARISON_SQL[op];
        if (!cmp) {
          this.fail(`${path}.op`, `unknown filter operator ${JSON.stringify(op)}`);
          return null;
        }
        return `${col} ${cmp} ${p}`;
      }
    }
  }
}

/**
 * Validates `query` against the source's schema and compiles it. Every problem found is reported at once
 * as a 400 with one entry per bad field.
 */
/**
 * What the file holds that makes a query cheaper, from its Parquet statistics: the span of its time dimension's
 * values (a zone's offsets over it become a few comparisons per row instead of a time-zone lookup per row).
 */
export interface CompileHints {
  timeSpan?: { from: number; to: number } | null;
}

export function compileQuery(query: AnalyticsQuery, schema: readonly DatasetColumn[], file: string, hints: CompileHints = {}): CompiledQuery {
  const c = new Compiler(schema);
  const fileParam = c.param(file);
  const select: string[] = [];
  const columns: CompiledQuery['columns'] = [];
  const outputs = new Map<string, number>(); // output name → 1-based select position

  /** Adds a select item; returns its 1-based position, or null when its name is taken. */
  const addOutput = (name: string, expr: string, role: CompiledQuery['columns'][number]['role'], path: string): number | null => {
    if (outputs.has(name)) {
      c.fail(path, `the result already has a column named ${JSON.stringify(name)}; give this one a different name`);
      return null;
    }
    select.push(`${expr} AS ${sqlIdent(name)}`);
    columns.push({ name, role });
    outputs.set(name, select.length);
    return select.length;
  };

  const groupBy: number[] = [];
  /** Group keys given as an expression rather than their output's position. */
  const groupExpr = new Map<number, string>();
  query.dimensions.forEach((d, i) => {
    if (c.field(d, `dimensions.${i}`) === null) return;
    if (query.timeDimension?.field === d) {
      c.fail(`dimensions.${i}`, `${JSON.stringify(d)} is already the time dimension`);
      return;
    }
    const pos = addOutput(d, sqlIdent(d), 'dimension', `dimensions.${i}`);
    if (pos !== null) groupBy.push(pos);
  });

  const where: string[] = [];
  let timePosition: number | null = null;
  let ranges: ScanRange[] | null = null;
  /** With compareTo: which rows are the current period's and which the previous one's (SQL conditions). */
  let periods: { current: string; previous: string } | null = null;
  const td = query.timeDimension;
  if (query.compareTo !== undefined && (!td || td.from === undefined || td.to === undefined)) {
    c.fail('compareTo', 'compareTo needs a time range: set timeDimension with from and to');
  }
  if (td) {
    const type = c.field(td.field, 'timeDimension.field');
    const unit = GRANULARITY_SQL[td.granularity];
    if (!unit) c.fail('timeDimension.granularity', `granularity must be one of ${Object.keys(GRANULARITY_SQL).join(', ')}`);
    const weekStartsOn = td.weekStartsOn ?? 1;
    if (!Number.isInteger(weekStartsOn) || WEEK_ORIGIN[weekStartsOn] === undefined) c.fail('timeDimension.weekStartsOn', 'weekStartsOn must be 0 (Sunday) to 6 (Saturday)');
    if (type !== null && type !== 'timestamp') {
      // Ingestion already types a column whose every value is a time as timestamp, so a string column holds
      // values that are not times: bucketing it would put them all in one null bucket.
      const why = type === 'string' ? ' (ingestion types a column as timestamp when every value in it is a time; this one has values that are not)' : '';
      c.fail('timeDimension.field', `${JSON.stringify(td.field)} is ${withArticle(type)} field; a time dimension needs a timestamp field${why}`);
    } else if (type !== null && unit && WEEK_ORIGIN[weekStartsOn] !== undefined) {
      const timeZone = td.timezone ?? 'UTC';
      const utc = timeZone === 'UTC';
      // The column is UTC; `local` is its wall-clock time in the zone: the column plus the offset at that instant
      // (from the zone's offsets over the file's span), or DuckDB's ICU when the span is unknown.
      const t = `CAST(${sqlIdent(td.field)} AS TIMESTAMP)`;
      // Bound only where an expression uses it: DuckDB refuses a parameter no expression takes.
      let zoneParam: string | null = null;
      const zone = () => (zoneParam ??= c.param(timeZone));
      const at = (ms: number) => `CAST(${c.param(sqlTimestamp(ms))} AS TIMESTAMP)`;
      const segments = !utc && hints.timeSpan ? offsetSegments(timeZone, hints.timeSpan.from, hints.timeSpan.to) : null;
      let local = t;
      if (segments) {
        // The offset at each row's instant by a balanced tree of comparisons over the zone's changes in the data.
        const tree = (lo: number, hi: number): string => {
          if (lo === hi) return c.param(segments.offsets[lo]!);
          const mid = (lo + hi + 1) >> 1;
          return `CASE WHEN ${t} < ${at(segments.starts[mid]!)} THEN ${tree(lo, mid - 1)} ELSE ${tree(mid, hi)} END`;
        };
        local = `(${t} + to_minutes(CAST(${tree(0, segments.offsets.length - 1)} AS BIGINT)))`;
      } else if (!utc) {
        local = `timezone(${zone()}, timezone('UTC', ${t}))`;
      }
      const bound = (key: 'from' | 'to'): number | null => {
        const raw = td[key];
        if (raw === undefined) return null;
        const ms = parseInstant(raw, timeZone);
        if (ms === null) c.fail(`timeDimension.${key}`, `must be an ISO-8601 time such as 2024-01-31T00:00:00Z (without an offset, a local time in ${timeZone})`);
        return ms;
      };
      const from = bound('from');
      const to = bound('to');
      const badRange = from !== null && to !== null && from >= to;
      if (badRange) c.fail('timeDimension.to', 'to must be later than from (from is inclusive, to exclusive)');
      const within = (r: { from: number; to: number }) => `(${t} >= ${at(r.from)} AND ${t} < ${at(r.to)})`;

      // The previous period's rows are bucketed at their wall time moved onto the current period (`shift`).
      let localEff = local;
      let instantEff = t;
      if (query.compareTo !== undefined && from !== null && to !== null && !badRange) {
        const previous = comparedPeriod(query.compareTo, { from, to }, timeZone);
        if ('error' in previous) c.fail(previous.path, previous.error);
        else {
          periods = { current: within({ from, to }), previous: within(previous) };
          ranges = [
            { from: previous.from, to: previous.to },
            { from, to },
          ];
          where.push(`(${periods.current} OR ${periods.previous})`);
          const shift = previous.shiftYears ? `INTERVAL ${previous.shiftYears} YEAR` : `to_microseconds(CAST(${c.param(previous.shiftMs * 1000)} AS BIGINT))`;
          localEff = `(CASE WHEN ${periods.previous} THEN ${local} + ${shift} ELSE ${local} END)`;
          if (!utc) instantEff = `(CASE WHEN ${periods.previous} THEN timezone('UTC', timezone(${zone()}, ${local} + ${shift})) ELSE ${t} END)`;
        }
      } else {
        if (from !== null) where.push(`${t} >= ${at(from)}`);
        if (to !== null) where.push(`${t} < ${at(to)}`);
        if (from !== null || to !== null) ranges = [{ from, to }];
      }

      const truncated =
        td.granularity === 'week' && weekStartsOn !== 1 ? `time_bucket(INTERVAL 7 DAY, ${localEff}, TIMESTAMP '${WEEK_ORIGIN[weekStartsOn]}')` : `date_trunc(${unit}, ${localEff})`;
      // Back to the UTC instant the local bucket starts at. An hour goes back by its own offset, so the two
      // 02:00 hours of a night the clocks go back stay two buckets.
      const bucket = utc
        ? truncated
        : td.granularity === 'hour'
          ? `${instantEff} - (${localEff} - date_trunc('hour', ${localEff}))`
          : `timezone('UTC', timezone(${zone()}, ${truncated}))`;
      timePosition = addOutput(td.field, bucket, 'time', 'timeDimension.field');
      if (timePosition !== null) {
        groupBy.push(timePosition);
        // Grouped on the local bucket, so the conversion back to UTC runs once a bucket, not once a row.
        if (!utc && td.granularity !== 'hour') groupExpr.set(timePosition, truncated);
      }
    }
  }

  query.measures.forEach((m, i) => {
    const spec = MEASURES[m.op];
    if (!spec) {
      c.fail(`measures.${i}.op`, `unknown measure ${JSON.stringify(m.op)}`);
      return;
    }
    let expr: string;
    if (m.field === undefined) {
      if (spec.needsField) {
        c.fail(`measures.${i}.field`, `${m.op} needs a field`);
        return;
      }
      expr = spec.sql('');
    } else {
      const type = c.field(m.field, `measures.${i}.field`);
      if (type === null) return;
      if (spec.types && !spec.types.includes(type)) {
        c.fail(`measures.${i}.field`, `${m.op} cannot be computed on ${JSON.stringify(m.field)}, ${withArticle(type)} field (it needs ${spec.types.join(' or ')})`);
        return;
      }
      expr = spec.sql(sqlIdent(m.field));
    }
    const name = m.as ?? defaultAlias(m.op, m.field);
    const path = m.as ? `measures.${i}.as` : `measures.${i}`;
    if (!periods) {
      addOutput(name, expr, 'measure', path);
      return;
    }
    // Every measure is an aggregate call, so FILTER picks each period's rows out of the one scan.
    const current = `${expr} FILTER (WHERE ${periods.current})`;
    const previous = `${expr} FILTER (WHERE ${periods.previous})`;
    const numeric = ALWAYS_NUMERIC.has(m.op) || (m.field !== undefined && NUMERIC.includes(c.field(m.field, `measures.${i}.field`)!));
    addOutput(name, current, 'measure', path);
    addOutput(`${name}_previous`, previous, 'measure', path);
    addOutput(`${name}_change`, numeric ? `(${current}) - (${previous})` : 'CAST(NULL AS DOUBLE)', 'measure', path);
    addOutput(
      `${name}_relativeChange`,
      numeric ? `CASE WHEN (${previous}) = 0 THEN NULL ELSE CAST((${current}) - (${previous}) AS DOUBLE) / abs(CAST(${previous} AS DOUBLE)) END` : 'CAST(NULL AS DOUBLE)',
      'measure',
      path,
    );
  });

  query.filters.forEach((f, i) => {
    const sql = c.filter(f, `filters.${i}`, 1);
    if (sql !== null) where.push(sql);
  });

  const order: string[] = [];
  const ordered = new Set<number>();
  query.orderBy.forEach((o, i) => {
    const pos = outputs.get(o.field);
    if (pos === undefined) {
      const names = [...outputs.keys()].map((n) => JSON.stringify(n)).join(', ');
      c.fail(`orderBy.${i}.field`, `cannot order by ${JSON.stringify(o.field)}: it is not a dimension, measure or the time dimension of this query (those are ${names || 'none'})`);
      return;
    }
    if (ordered.has(pos)) {
      c.fail(`orderBy.${i}.field`, `${JSON.stringify(o.field)} is already in orderBy`);
      return;
    }
    if (o.direction !== 'asc' && o.direction !== 'desc') {
      c.fail(`orderBy.${i}.direction`, 'direction must be asc or desc');
      return;
    }
    ordered.add(pos);
    order.push(`${pos} ${o.direction === 'desc' ? 'DESC' : 'ASC'} NULLS LAST`);
  });
  // Then every group key, time first, so a page boundary (limit/offset) is always the same.
  const tieBreak = timePosition === null ? groupBy : [timePosition, ...groupBy.filter((p) => p !== timePosition)];
  for (const pos of tieBreak) if (!ordered.has(pos)) order.push(`${pos} ASC NULLS LAST`);

  if (!Number.isInteger(query.limit) || query.limit < 1) c.fail('limit', 'limit must be a positive integer');
  if (!Number.isInteger(query.offset) || query.offset < 0) c.fail('offset', 'offset must be a non-negative integer');
  if (c.params.length > MAX_PARAMS) c.fail('filters', `a query may carry at most ${MAX_PARAMS} values`);

  if (c.errors.length) throw queryInvalid(c.errors);

  // The export reads every row, so it takes the params before limit and offset (the last two).
  const fullParams = [...c.params];
  const limit = c.param(query.limit);
  const offset = c.param(query.offset);
  const body = [
    `FROM read_parquet(${fileParam})`,
    where.length ? `WHERE ${where.join(' AND ')}` : '',
    groupBy.length ? `GROUP BY ${groupBy.map((p) => groupExpr.get(p) ?? p).join(', ')}` : '',
  ].filter(Boolean);
  const orderSql = order.length ? [`ORDER BY ${order.join(', ')}`] : [];
  // Every query aggregates, so the window counts the result's rows (groups) in the same pass as the page.
  const sql = [`SELECT ${select.join(', ')}, count(*) OVER () AS "__total"`, ...body, ...orderSql, `LIMIT ${limit} OFFSET ${offset}`].join(' ');
  return {
    sql,
    params: c.params,
    fullSql: [`SELECT ${select.join(', ')}`, ...body, ...orderSql].join(' '),
    fullParams,
    countSql: `SELECT count(*) AS "n" FROM (SELECT ${select.join(', ')} ${body.join(' ')}) AS r`,
    columns,
    scan: { columns: [...c.used], timeField: td?.field ?? null, ranges },
  };
}
