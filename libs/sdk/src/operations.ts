import type { z } from 'zod';
import {
  accountSchema,
  createModelBody,
  createSourceBody,
  createWebhookBody,
  deliveryListSchema,
  listQuerySchema,
  metricsQuerySchema,
  metricsSchema,
  modelAliasesSchema,
  modelVersionListSchema,
  retrainModelBody,
  updateAliasesBody,
  modelListSchema,
  modelSchema,
  overviewSchema,
  predictBody,
  predictionSchema,
  querySchema,
  reportCsvSchema,
  reportParquetSchema,
  reportListSchema,
  replaceSourceDataQuery,
  reportSchema,
  sourceListSchema,
  uploadSourceQuery,
  sourceSchema,
  usageSchema,
  deliverySchema,
  webhookCreatedSchema,
  webhookListSchema,
  webhookSchema,
  webhookSecretRotatedSchema,
  webhookTestSchema,
  replayWebhookBody,
  webhookReplaySchema,
} from '@dap/contracts';

/**
 * The schemas of every /v1 operation an API key can call, keyed by operationId (the dashboard's
 * session-only and public sign-in operations are not the SDK's). They are the very objects in
 * `API_OPERATIONS` (a test checks identity), the table the gateway routes from and the OpenAPI document
 * is generated from, so the SDK's types cannot drift from the API. Method and path come from that table at
 * run time.
 */
export const SDK_OPERATIONS = {
  getAccount: { result: accountSchema },
  getUsage: { result: usageSchema },
  listSources: { query: listQuerySchema, result: sourceListSchema },
  createSource: { body: createSourceBody, result: sourceSchema },
  getSource: { result: sourceSchema },
  deleteSource: { result: null },
  syncSource: { result: sourceSchema },
  uploadSource: { query: uploadSourceQuery, result: sourceSchema },
  replaceSourceData: { query: replaceSourceDataQuery, result: sourceSchema },
  getOverview: { result: overviewSchema },
  listReports: { query: listQuerySchema, result: reportListSchema },
  getReport: { result: reportSchema },
  exportReportCsv: { result: reportCsvSchema },
  exportReportParquet: { result: reportParquetSchema },
  runQuery: { body: querySchema, result: reportSchema },
  listModels: { query: listQuerySchema, result: modelListSchema },
  createModel: { body: createModelBody, result: modelSchema },
  getModel: { result: modelSchema },
  deleteModel: { result: null },
  predict: { body: predictBody, result: predictionSchema },
  getModelMetrics: { query: metricsQuerySchema, result: metricsSchema },
  listModelVersions: { result: modelVersionListSchema },
  retrainModel: { body: retrainModelBody, result: modelSchema },
  updateModelAliases: { body: updateAliasesBody, result: modelAliasesSchema },
  listWebhooks: { query: listQuerySchema, result: webhookListSchema },
  createWebhook: { body: createWebhookBody, result: webhookCreatedSchema },
  getWebhook: { result: webhookSchema },
  deleteWebhook: { result: null },
  listDeliveries: { query: listQuerySchema, result: deliveryListSchema },
  sendTestEvent: { result: webhookTestSchema },
  rotateWebhookSecret: { result: webhookSecretRotatedSchema },
  enableWebhook: { result: webhookSchema },
  redeliverMessage: { result: deliverySchema },
  replayWebhook: { body: replayWebhookBody, result: webhookReplaySchema },
} as const satisfies Record<string, { body?: z.ZodType; query?: z.ZodType; result: z.ZodType | null }>;

type Ops = typeof SDK_OPERATIONS;
export type OperationId = keyof Ops;

/** What a client sends: the schema's input type (defaults may be left out). */
export type RequestBody<K extends OperationId> = Ops[K] extends { body: infer S extends z.ZodType } ? z.input<S> : never;
/** Query parameters as the server reads them, every one optional. */
export type QueryParams<K extends OperationId> = Ops[K] extends { query: infer S extends z.ZodType } ? Partial<z.output<S>> : never;
/** What the server answers: the success schema's output type; void for an empty (204) body. */
export type ResultOf<K extends OperationId> = Ops[K]['result'] extends infer S extends z.ZodType ? z.output<S> : void;

// The resource types, named for application code.
export type Source = z.output<typeof sourceSchema>;
export type CreateSourceInput = z.input<typeof createSourceBody>;
/** A file for `sources.upload` / `sources.replaceData`: bytes, text, a Blob or File, or a stream (a Node Readable is one). */
export type UploadFile = Blob | Uint8Array | ArrayBuffer | string | ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>;
export type FileFormat = 'csv' | 'json' | 'ndjson';
export type Report = z.output<typeof reportSchema>;
export type ReportSummary = ResultOf<'listReports'>['data'][number];
export type AnalyticsQueryInput = z.input<typeof querySchema>;
export type Overview = z.output<typeof overviewSchema>;
export type Model = z.output<typeof modelSchema>;
export type CreateModelInput = z.input<typeof createModelBody>;
export type PredictInput = z.input<typeof predictBody>;
export type Prediction = z.output<typeof predictionSchema>;
export type ModelMetrics = z.output<typeof metricsSchema>;
export type ModelMetricsParams = Partial<z.output<typeof metricsQuerySchema>>;
export type ModelVersion = z.output<typeof modelVersionListSchema>['data'][number];
export type RetrainModelInput = z.input<typeof retrainModelBody>;
export type UpdateModelAliasesInput = z.input<typeof updateAliasesBody>;
export type ModelAliases = z.output<typeof modelAliasesSchema>;
export type Webhook = z.output<typeof webhookSchema>;
export type WebhookCreated = z.output<typeof webhookCreatedSchema>;
export type CreateWebhookInput = z.input<typeof createWebhookBody>;
export type Delivery = ResultOf<'listDeliveries'>['data'][number];
export type WebhookTest = z.output<typeof webhookTestSchema>;
export type WebhookSecretRotated = z.output<typeof webhookSecretRotatedSchema>;
export type ReplayWebhookInput = z.input<typeof replayWebhookBody>;
export type WebhookReplay = z.output<typeof webhookReplaySchema>;
export type Account = z.output<typeof accountSchema>;
export type Usage = z.output<typeof usageSchema>;
export type ListParams = Partial<z.output<typeof listQuerySchema>>;
export interface Page<T> {
  data: T[];
  hasMore: boolean;
  nextCursor: string | null;
}
