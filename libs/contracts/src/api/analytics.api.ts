import { z } from 'zod';
import { isoDate, listOf, namedResourceSchema } from './common.ts';
import { idSchema } from '../ids.ts';

export const MEASURE_OPS = ['count', 'countDistinct', 'sum', 'avg', 'min', 'max', 'median', 'p90', 'p99'] as const;
export const GRANULARITIES = ['hour', 'day', 'week', 'month', 'year'] as const;
export const FILTER_OPS = ['eq', 'ne', 'gt', 'gte', 'lt', 'lte', 'in', 'notIn', 'contains', 'startsWith', 'isNull', 'isNotNull'] as const;
export const MAX_RESULT_ROWS = 10_000;

const fieldName = z.string().min(1).max(128);
const alias = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,62}$/, 'an alias is letters, digits and _');
const filterValue = z.union([z.string().max(1000), z.number(), z.boolean(), z.null()]).meta({
  description:
    "A value of the field's type: a string, a number, true or false, or an ISO-8601 time. An integer field also takes a string of digits, which selects integers beyond 2^53 exactly (results give them as such strings).",
});

/** A name the platform's time-zone database knows (IANA, e.g. Europe/Berlin), as this runtime's Intl does. */
export function isTimeZone(name: string): boolean {
  if (!/^[A-Za-z][A-Za-z0-9_+-]*(?:\/[A-Za-z0-9_+-]+){0,2}$/.test(name)) return false;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: name });
    return true;
  } catch {
    return false;
  }
}

const timeRange = z.strictObject({ from: isoDate, to: isoDate });

export const measureSchema = z.strictObject({ op: z.enum(MEASURE_OPS), field: fieldName.optional(), as: alias.optional() });

export type Filter = { field: string; op: (typeof FILTER_OPS)[number]; value?: z.infer<typeof filterValue> | z.infer<typeof filterValue>[] } | { and: Filter[] } | { or: Filter[] };

export const filterSchema: z.ZodType<Filter> = z.lazy(() =>
  z.union([
    z.strictObject({
      field: fieldName,
      op: z.enum(FILTER_OPS),
      value: z.union([filterValue, z.array(filterValue).max(1000)]).optional(),
    }),
    z.strictObject({ and: z.array(filterSchema).min(1).max(50) }),
    z.strictObject({ or: z.array(filterSchema).min(1).max(50) }),
  ]),
);

export const querySchema = z
  .strictObject({
    sourceId: idSchema('src'),
    measures: z.array(measureSchema).min(1).max(20),
    dimensions: z.array(fieldName).max(10).default([]),
    timeDimension: z
      .strictObject({
        field: fieldName.describe(
          'A timestamp column of the source. Other columns are refused with 400, strings included: ingestion types a text column as timestamp when every value in it is a time, so a string column holds values that are not times.',
        ),
        granularity: z.enum(GRANULARITIES),
        from: isoDate
          .optional()
          .describe('The first instant included. An ISO-8601 time; without an offset (`2024-03-01` or `2024-03-01T08:00:00`) it is a local time in `timezone`.'),
        to: isoDate.optional().describe('The first instant excluded; read like `from`.'),
        timezone: z
          .string()
          .max(64)
          .refine(isTimeZone, 'must be an IANA time zone such as Europe/Berlin or America/New_York')
          .default('UTC')
          .describe(
            'The IANA time zone buckets follow: a day, week, month or year starts at local midnight there (23 or 25 hours long on a daylight-saving change), an hour at the local hour. Bucket times in results are the instants those buckets start, in UTC.',
          ),
        weekStartsOn: z.number().int().min(0).max(6).default(1).describe('The day a week bucket starts on: 0 Sunday, 1 Monday (the default, as ISO-8601), … 6 Saturday.'),
      })
      .optional(),
    compareTo: z
      .union([z.enum(['previousPeriod', 'previousYear']), timeRange])
      .optional()
      .describe(
        "Compare with another period in the same request: `previousPeriod` (as long as from..to, just before it), `previousYear` (the same local dates a year earlier) or an explicit `{from, to}` that does not overlap the range. Needs `timeDimension.from` and `to`. Each measure gets `<name>_previous`, `<name>_change` (current − previous) and `<name>_relativeChange` ((current − previous) / |previous|, null when the previous is 0 or missing); rows are the current period's buckets, the previous period's data shifted onto them.",
      ),
    filters: z.array(filterSchema).max(50).default([]),
    orderBy: z
      .array(z.strictObject({ field: fieldName, direction: z.enum(['asc', 'desc']).default('asc') }))
      .max(10)
      .default([]),
    limit: z.number().int().min(1).max(MAX_RESULT_ROWS).default(1000),
    offset: z.number().int().min(0).max(1_000_000).default(0),
    async: z.boolean().default(false),
    dryRun: z
      .boolean()
      .default(false)
      .describe('Validate and estimate only: answers 200 with the rows and bytes the query would read (from the Parquet metadata) and its plan, runs nothing and saves no report.'),
    saveReport: z
      .boolean()
      .default(true)
      .describe(
        'Whether the run is saved as a report (the default). With false the query runs to its end within the time limit and answers 200 with the result itself (a QueryResult, which has no id and cannot be exported); nothing is stored and no report event is sent. Cannot be combined with `async: true`.',
      ),
  })
  .meta({
    id: 'AnalyticsQuery',
    examples: [
      {
        sourceId: 'src_01JCQ3N6W4X8Z5Y7A9B2C4D6E8',
        measures: [
          { op: 'count', as: 'orders' },
          { op: 'sum', field: 'amount', as: 'revenue' },
        ],
        dimensions: ['country'],
        filters: [{ field: 'status', op: 'eq', value: 'paid' }],
        orderBy: [{ field: 'revenue', direction: 'desc' }],
        limit: 10,
      },
    ],
  });
export type AnalyticsQuery = z.infer<typeof querySchema>;

/** What an insight stores: the query, without the options of one run. */
export const insightQuerySchema = querySchema.omit({ async: true, dryRun: true, saveReport: true }).meta({ id: 'InsightQuery' });
export type InsightQuery = z.infer<typeof insightQuerySchema>;

const scanFields = {
  rowsRead: z
    .number()
    .int()
    .nonnegative()
    .describe("Rows in the Parquet row groups the query reads: all of the file's, less the row groups its time range rules out by their min/max statistics."),
  bytesRead: z.number().int().nonnegative().describe('Compressed bytes of the columns the query uses in those row groups, from the Parquet metadata (a `count` alone reads none).'),
};

export const queryStatisticsSchema = z
  .object({ elapsedMs: z.number().nonnegative().describe('How long the query ran, in milliseconds.'), ...scanFields })
  .meta({ id: 'QueryStatistics' });
export type QueryStatistics = z.infer<typeof queryStatisticsSchema>;

export const queryEstimateSchema = z
  .object({
    dryRun: z.literal(true),
    estimate: z.object({
      ...scanFields,
      rowGroups: z.number().int().nonnegative().describe('Row groups read, of `rowGroupsTotal`.'),
      rowGroupsTotal: z.number().int().nonnegative(),
    }),
    limit: z
      .object({
        plan: z.string(),
        maxBytesRead: z.number().int().nullable().describe("The most bytes one query may read on the account's plan; null when unlimited."),
        withinLimit: z.boolean().describe('False when running the query would be refused with 422.'),
      })
      .describe("The plan's cap on the bytes one query reads."),
    plan: z
      .object({
        columns: z.array(z.object({ name: z.string(), role: z.enum(['dimension', 'time', 'measure']) })).describe('The result columns, in order.'),
        reads: z.array(z.string()).describe('The source columns the query reads.'),
        operators: z.array(z.string()).describe("DuckDB's physical plan, one operator per entry from the top, children indented by two spaces."),
      })
      .describe('The shape of the compiled query.'),
  })
  .meta({ id: 'QueryEstimate' });
export type QueryEstimateDto = z.infer<typeof queryEstimateSchema>;

export const REPORT_STATUSES = ['running', 'completed', 'failed'] as const;
const cell = z.union([z.string(), z.number(), z.boolean(), z.null()]);

export const reportSchema = z
  .object({
    id: z.string(),
    query: z.record(z.string(), z.unknown()),
    status: z.enum(REPORT_STATUSES),
    error: z.string().nullable(),
    columns: z.array(z.object({ name: z.string(), type: z.string() })),
    rows: z
      .array(z.record(z.string(), cell))
      .describe(
        'One object per result row, by column name (at most `limit`, itself at most 10,000; the exports carry every row). Integers beyond ±(2^53 − 1), which a JSON number cannot carry exactly in most clients, come as strings of their exact digits; so do decimals that a double cannot hold exactly. Measures computed in floating point (sums, averages and quantiles of double columns, averages of integers) are rounded to 15 significant digits, the most a double always holds: `318.34`, not `318.34000000000003`. Values read from the data (dimensions, min, max) come as stored, single-precision floats as their shortest decimal.',
      ),
    rowCount: z.number().int().describe('Rows in `rows`.'),
    totalRows: z
      .number()
      .int()
      .nullable()
      .describe('Rows in the whole result, before `limit` and `offset`; null while running, when failed, and for reports made before totals were recorded.'),
    truncated: z
      .boolean()
      .describe(
        'True when the result has rows past this page (offset + rowCount < totalRows): raise `limit`, page with `offset`, or export the report for every row. Reports made before totals were recorded say true when their page filled its limit.',
      ),
    durationMs: z.number().nullable(),
    statistics: queryStatisticsSchema.nullable().describe('What the run cost; null while running, when failed, and for reports made before statistics were recorded.'),
    createdAt: isoDate,
    completedAt: isoDate.nullable(),
  })
  .meta({ id: 'Report' });
export type ReportDto = z.infer<typeof reportSchema>;
/** A query's result as answered without saving a report (`saveReport: false`, or an insight run). */
export const queryResultSchema = reportSchema
  .pick({ query: true, columns: true, rows: true, rowCount: true, truncated: true, durationMs: true, statistics: true })
  .extend({
    saved: z.literal(false).describe('Always false: no report was saved, so there is no id to fetch or export.'),
    totalRows: z.number().int().describe('Rows in the whole result, before `limit` and `offset`.'),
    completedAt: isoDate,
  })
  .meta({ id: 'QueryResult' });
export type QueryResultDto = z.infer<typeof queryResultSchema>;

/** A list carries reports without their rows (up to MAX_RESULT_ROWS each); GET the report for them. */
export const reportSummarySchema = reportSchema.omit({ rows: true }).meta({ id: 'ReportSummary' });
export type ReportSummaryDto = z.infer<typeof reportSummarySchema>;
export const reportListSchema = listOf(reportSummarySchema).meta({ id: 'ReportList' });

/** Days in `apiRequestsPerDay`: today (UTC) and the 29 days before it. */
export const USAGE_DAYS = 30;
const count = (description: string) => z.number().int().nonnegative().describe(description);

export const overviewSchema = z
  .object({
    counts: z.object({
      sources: count('Connected data sources (not deleted), in any status.'),
      rows: count('Rows held by the ready sources.'),
      reports: count('Reports (saved queries), in any status.'),
      models: count('Models the account can use: the built-in ones plus every trained or uploaded model that became ready.'),
      predictions: count('Prediction requests served (a batch counts once).'),
      webhooks: count('Registered webhook endpoints (not deleted).'),
      deliveries: z
        .object({
          succeeded: count('Webhook messages an endpoint accepted with a 2xx.'),
          failed: count('Webhook messages that failed for good: retries exhausted, or the endpoint answered 410.'),
        })
        .describe(
          'Webhook deliveries that reached a final state, over all endpoints. A delivery counts once however many attempts it took (a manual redelivery is a new delivery); one still being retried, or cancelled because its endpoint was removed or disabled, is in neither count.',
        ),
    }),
    apiRequestsPerDay: z
      .array(
        z.object({
          date: z
            .string()
            .regex(/^\d{4}-\d{2}-\d{2}$/)
            .describe('The UTC day, YYYY-MM-DD.'),
          requests: count(
            "Requests the gateway received with the account's API keys that day, rejected ones included; the dashboard's own calls are not counted (GET /v1/analytics/usage shows them apart).",
          ),
          rejected: count('Of those, the requests refused with 429 (rate limit exceeded).'),
        }),
      )
      .length(USAGE_DAYS)
      .describe(
        'API requests per UTC day over the last 30 days, oldest first, today last; days without requests are present with zeros. The gateway reports counts every few seconds, so today lags by up to about 10 s.',
      ),
    recentActivity: z
      .array(z.object({ id: z.string(), type: z.string(), subject: z.string(), occurredAt: isoDate }))
      .describe("The latest 20 events about the account's sources, reports, models, predictions and webhooks, newest first (webhook deliveries are counted, not listed)."),
    generatedAt: isoDate,
  })
  .meta({ id: 'AnalyticsOverview' });
export type OverviewDto = z.infer<typeof overviewSchema>;

/** The windows GET /analytics/usage answers, each with the width of its time-series buckets. */
export const USAGE_WINDOWS = { '1h': { bucketSeconds: 60, buckets: 60 }, '24h': { bucketSeconds: 3600, buckets: 24 }, '30d': { bucketSeconds: 86_400, buckets: 30 } } as const;
export type UsageWindow = keyof typeof USAGE_WINDOWS;
export const usageStatsQuery = z.strictObject({
  window: z
    .enum(Object.keys(USAGE_WINDOWS) as [UsageWindow, ...UsageWindow[]])
    .default('24h')
    .describe('1h: per minute over the last 60 minutes; 24h: per hour over the last 24 hours; 30d: per UTC day over the last 30 days. All end with the current bucket.'),
  groupBy: z.enum(['key', 'operation']).default('key').describe('key: one group per API key, one for the dashboard; operation: one group per operation id.'),
});
export type UsageStatsQuery = z.infer<typeof usageStatsQuery>;

const usagePoint = z.object({
  start: isoDate.describe('The start of the bucket.'),
  requests: count('Calls answered in the bucket.'),
  clientErrors: count('Of those, 4xx answers other than 429.'),
  serverErrors: count('Of those, 5xx answers.'),
  rateLimited: count('Of those, 429 answers (rate limit exceeded).'),
});
const usageTotals = usagePoint.omit({ start: true }).extend({
  errorRate: z.number().min(0).max(1).describe('(clientErrors + serverErrors) / requests, 0 without requests; 429s are counted apart, in rateLimited.'),
});
export const usageStatsSchema = z
  .object({
    window: z.enum(Object.keys(USAGE_WINDOWS) as [UsageWindow, ...UsageWindow[]]),
    groupBy: z.enum(['key', 'operation']),
    from: isoDate.describe('The start of the oldest bucket.'),
    to: isoDate.describe('When the answer was computed (the end of the newest, current bucket).'),
    bucketSeconds: z.number().int().describe('The width of a time-series bucket: 60, 3600 or 86400.'),
    totals: usageTotals,
    series: z.array(usagePoint).describe('Every bucket of the window, oldest first, empty ones with zeros.'),
    groups: z
      .array(
        usageTotals.extend({
          group: z.string().describe('The key id, `dashboard` or `other` (groupBy=key), or the operation id (groupBy=operation).'),
          caller: z
            .enum(['key', 'dashboard', 'other'])
            .nullable()
            .describe(
              "groupBy=key: `key` for an API key, `dashboard` for the dashboard's own calls (never counted against a key), `other` for calls past the gateway's cap on distinct counters per flush; null for groupBy=operation.",
            ),
          keyId: z.string().nullable(),
          keyHint: z.string().nullable().describe('The key prefix and its last four characters (never the secret), as in the key list.'),
          operationId: z.string().nullable().describe('groupBy=operation: the operation id from the OpenAPI document (`other` for the overflow).'),
          series: z.array(usagePoint),
        }),
      )
      .describe('Groups with at least one call in the window, most requests first.'),
  })
  .meta({ id: 'UsageStats' });
export type UsageStatsDto = z.infer<typeof usageStatsSchema>;

/** GET /analytics/reports/{id}/export.csv answers `text/csv`: RFC 4180, a header row of column names, CRLF lines. */
export const REPORT_CSV_MEDIA_TYPE = 'text/csv';
export const reportCsvSchema = z.string().meta({
  id: 'ReportCsv',
  description:
    "Every row of the report's result as CSV (text/csv; charset=utf-8), without the 10,000-row cap of the JSON answer and ignoring the query's limit and offset, in the query's order: a header row of column names, then one CRLF line per row. Numbers follow the rules of the JSON rows (exact digits for wide integers and decimals, computed doubles to 15 significant digits); cells a spreadsheet would run as formulas start with an apostrophe.",
});

/** GET /analytics/reports/{id}/export.parquet answers a Parquet file. */
export const REPORT_PARQUET_MEDIA_TYPE = 'application/vnd.apache.parquet';
export const reportParquetSchema = z.string().meta({
  id: 'ReportParquet',
  format: 'binary',
  description:
    "Every row of the report's result as one Parquet file (zstd), without the 10,000-row cap and ignoring the query's limit and offset, in the query's order. Columns keep their types: times are TIMESTAMP (UTC), decimals DECIMAL, computed doubles rounded to 15 significant digits, and integers wider than 64 bits (sums of integer columns) DECIMAL(38, 0), exact.",
});

/** Names people give insights and dashboards: trimmed, 1 to 100 characters. */
const displayName = (what: string) =>
  z
    .string()
    .trim()
    .min(1, `the ${what} needs a name`)
    .max(100, `a ${what} name is at most 100 characters`)
    .describe(`The ${what}'s name, 1 to 100 characters (leading and trailing spaces are removed).`);

/** How the dashboard draws an insight; the API only keeps it. */
export const INSIGHT_CHARTS = ['line', 'bar', 'area', 'table', 'number'] as const;
const insightChart = z.enum(INSIGHT_CHARTS).describe('How the dashboard draws the result: a line, bar or area chart, a table, or one big number.');

export const createInsightBody = z.strictObject({ name: displayName('insight'), query: insightQuerySchema, chart: insightChart.default('line') }).meta({ id: 'CreateInsight' });
export const updateInsightBody = z
  .strictObject({ name: displayName('insight').optional(), query: insightQuerySchema.optional(), chart: insightChart.optional() })
  .refine((b) => b.name !== undefined || b.query !== undefined || b.chart !== undefined, { message: 'send a name, a query or a chart to change' })
  .meta({ id: 'UpdateInsight' });

export const insightSchema = namedResourceSchema
  .extend({
    query: z.record(z.string(), z.unknown()).describe('The saved query (an InsightQuery).'),
    chart: z.enum(INSIGHT_CHARTS),
    createdAt: isoDate,
    updatedAt: isoDate,
  })
  .meta({ id: 'Insight' });
export type InsightDto = z.infer<typeof insightSchema>;
export const insightListSchema = listOf(insightSchema).meta({ id: 'InsightList' });

/** Dashboards lay tiles out on a grid 12 columns wide; rows go down as far as MAX_GRID_ROW. */
export const GRID_COLUMNS = 12;
export const MAX_GRID_ROW = 200;
export const MAX_TILE_HEIGHT = 12;
export const MAX_DASHBOARD_TILES = 30;

const gridPlace = {
  x: z
    .number()
    .int()
    .min(0)
    .max(GRID_COLUMNS - 1)
    .describe(`The first grid column the tile covers, 0 to ${GRID_COLUMNS - 1}.`),
  y: z.number().int().min(0).max(MAX_GRID_ROW).describe(`The first grid row the tile covers, 0 to ${MAX_GRID_ROW}.`),
  w: z.number().int().min(1).max(GRID_COLUMNS).describe(`Columns wide, 1 to ${GRID_COLUMNS}; x + w is at most ${GRID_COLUMNS}.`),
  h: z.number().int().min(1).max(MAX_TILE_HEIGHT).describe(`Rows high, 1 to ${MAX_TILE_HEIGHT}.`),
};
/** x + w within the grid; an x or w out of its own range is already reported on its own. */
const fitsGrid = (t: { x?: number; w?: number }) => t.x === undefined || t.w === undefined || t.x >= GRID_COLUMNS || t.w > GRID_COLUMNS || t.x + t.w <= GRID_COLUMNS;
const fitsGridIssue = { message: `the tile runs past the grid's ${GRID_COLUMNS} columns: x + w must be at most ${GRID_COLUMNS}`, path: ['w'] };

export const addTileBody = z
  .strictObject({
    insightId: idSchema('ins'),
    x: gridPlace.x.optional(),
    y: gridPlace.y.optional(),
    w: gridPlace.w.default(6),
    h: gridPlace.h.default(4),
  })
  .refine(fitsGrid, fitsGridIssue)
  .refine((t) => (t.x === undefined) === (t.y === undefined), { message: 'give both x and y, or neither (the tile then takes the first free place)', path: ['y'] })
  .meta({ id: 'AddDashboardTile' });
export const moveTileBody = z
  .strictObject({ x: gridPlace.x.optional(), y: gridPlace.y.optional(), w: gridPlace.w.optional(), h: gridPlace.h.optional() })
  .refine((b) => Object.keys(b).length > 0, { message: 'send x, y, w or h to change' })
  .meta({ id: 'MoveDashboardTile' });

export const createDashboardBody = z.strictObject({ name: displayName('dashboard') }).meta({ id: 'CreateDashboard' });
export const updateDashboardBody = z.strictObject({ name: displayName('dashboard') }).meta({ id: 'UpdateDashboard' });

export const dashboardTileSchema = z
  .object({
    id: z.string(),
    insightId: z.string(),
    ...gridPlace,
    insight: insightSchema.describe('The insight the tile shows, as it is now.'),
  })
  .meta({ id: 'DashboardTile' });
export const dashboardSchema = namedResourceSchema
  .extend({
    tiles: z
      .array(dashboardTileSchema)
      .describe(
        `The tiles in reading order (by row, then column), at most ${MAX_DASHBOARD_TILES}. Tiles never overlap; deleting an insight removes its tiles from every dashboard.`,
      ),
    createdAt: isoDate,
    updatedAt: isoDate,
  })
  .meta({ id: 'Dashboard' });
export type DashboardDto = z.infer<typeof dashboardSchema>;
export const dashboardSummarySchema = dashboardSchema.omit({ tiles: true }).extend({ tileCount: z.number().int() }).meta({ id: 'DashboardSummary' });
export type DashboardSummaryDto = z.infer<typeof dashboardSummarySchema>;
export const dashboardListSchema = listOf(dashboardSummarySchema).meta({ id: 'DashboardList' });
