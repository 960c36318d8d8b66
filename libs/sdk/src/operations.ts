import type { components, operations } from './generated/openapi.d.ts';

/**
 * The SDK's types are those of the generated client: `src/generated/openapi.d.ts` is written by
 * `npm run generate:client` from the OpenAPI document the gateway serves (built from the contracts table),
 * and a test fails when it is stale, so the SDK cannot drift from the API.
 */
type Schemas = components['schemas'];

/** Every operation of the OpenAPI document, by its operationId. */
export type OperationId = keyof operations;

type SuccessStatus = 200 | 201 | 202 | 204;
type ContentOf<R> = R extends { content: infer C } ? C[keyof C] : void;

/** What a client sends: the JSON request body of the operation. */
export type RequestBody<K extends OperationId> = NonNullable<operations[K]['requestBody' & keyof operations[K]]> extends { content: { 'application/json': infer B } } ? B : never;
/** Query parameters as the document lists them, every one optional. */
export type QueryParams<K extends OperationId> = operations[K]['parameters'] extends { query?: infer Q } ? Partial<NonNullable<Q>> : never;
/** What the server answers: the success body (any of the operation's 2xx); void for an empty (204) body. */
export type ResultOf<K extends OperationId> = ContentOf<operations[K]['responses'][Extract<keyof operations[K]['responses'], SuccessStatus>]>;

// The resource types under their names in the OpenAPI document.
export type {
  Source,
  Report,
  ReportSummary,
  QueryEstimate,
  QueryStatistics,
  Insight,
  Dashboard,
  DashboardSummary,
  DashboardTile,
  UsageStats,
  Model,
  Prediction,
  ModelMetrics,
  Webhook,
  WebhookCreated,
  Delivery,
  DeliveryDetail,
  WebhookTest,
  WebhookSecretRotated,
  Account,
  Usage,
} from './generated/openapi.d.ts';

// The types that application code knows by another name, or that need a word of explanation.
export type CreateSourceInput = Schemas['CreateSource'];
export type UpdateSourceInput = Schemas['UpdateSource'];
/** `{ mode: 'full' }` pulls everything again and restarts an incremental source's cursor. */
export type SyncSourceInput = NonNullable<Schemas['SyncSource']>;
/** Incremental sync settings of a database source: a cursor column, and the key rows are merged by. */
export type IncrementalSettings = Schemas['IncrementalSync'];
/** When a url or database source syncs by itself: `{ every: '15m' }` or `{ cron: '0 * * * *', timezone: 'Europe/Berlin' }`. */
export type SyncSchedule = Schemas['SyncSchedule'];
/** A file for `sources.upload` / `sources.replaceData`: bytes, text, a Blob or File, or a stream (a Node Readable is one). */
export type UploadFile = Blob | Uint8Array | ArrayBuffer | string | ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>;
export type FileFormat = 'csv' | 'json' | 'ndjson';
export type AnalyticsQueryInput = Schemas['AnalyticsQuery'];
/** The result of a query run without a report (`saveReport: false`, or an insight run). */
export type QueryResult = Schemas['QueryResult'];
export type InsightQueryInput = Schemas['InsightQuery'];
export type CreateInsightInput = RequestBody<'createInsight'>;
export type UpdateInsightInput = RequestBody<'updateInsight'>;
export type AddDashboardTileInput = RequestBody<'addDashboardTile'>;
export type MoveDashboardTileInput = RequestBody<'moveDashboardTile'>;
export type Overview = Schemas['AnalyticsOverview'];
/** GET /analytics/usage: `window` 1h (per minute), 24h (per hour) or 30d (per day); `groupBy` key or operation. */
export type UsageStatsParams = NonNullable<operations['getUsageStats']['parameters']['query']>;
export type CreateModelInput = Schemas['CreateModel'];
export type PredictInput = Schemas['PredictRequest'];
export type ModelMetricsParams = QueryParams<'getModelMetrics'>;
export type ModelVersion = ResultOf<'listModelVersions'>['data'][number];
export type RetrainModelInput = RequestBody<'retrainModel'>;
export type UpdateModelAliasesInput = RequestBody<'updateModelAliases'>;
export type ModelAliases = ResultOf<'updateModelAliases'>;
export type CreateWebhookInput = Schemas['CreateWebhook'];
export type UpdateWebhookInput = Schemas['UpdateWebhook'];
/** The delivery log's filters: `status`, `eventType`, and `since`/`until` (the event's time, ISO-8601). */
export type DeliveryFilters = Omit<QueryParams<'listDeliveries'>, 'limit' | 'cursor'>;
export type ReplayWebhookInput = RequestBody<'replayWebhook'>;
export type WebhookReplay = ResultOf<'replayWebhook'>;
export type ListParams = QueryParams<'listSources'>;
export interface Page<T> {
  data: T[];
  hasMore: boolean;
  nextCursor: string | null;
}
