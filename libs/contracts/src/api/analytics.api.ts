import { z } from 'zod';
import { isoDate, listOf } from './common.ts';
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
        from: isoDate.optional(),
        to: isoDate.optional(),
      })
      .optional(),
    filters: z.array(filterSchema).max(50).default([]),
    orderBy: z
      .array(z.strictObject({ field: fieldName, direction: z.enum(['asc', 'desc']).default('asc') }))
      .max(10)
      .default([]),
    limit: z.number().int().min(1).max(MAX_RESULT_ROWS).default(1000),
    offset: z.number().int().min(0).max(1_000_000).default(0),
    async: z.boolean().default(false),
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
    createdAt: isoDate,
    completedAt: isoDate.nullable(),
  })
  .meta({ id: 'Report' });
export type ReportDto = z.infer<typeof reportSchema>;
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
          requests: count('Authenticated requests the gateway received for the account that day, rejected ones included.'),
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
