import { z } from 'zod';
import type { Scope } from '../plans.ts';
import { listQuerySchema } from './common.ts';
import {
  createSourceBody,
  replaceSourceDataQuery,
  sourceListSchema,
  sourceSchema,
  updateSourceBody,
  syncSourceBody,
  UPLOAD_MEDIA_TYPES,
  uploadFileSchema,
  uploadSourceQuery,
  QUARANTINE_CSV_MEDIA_TYPE,
  quarantineCsvSchema,
} from './sources.api.ts';
import {
  overviewSchema,
  querySchema,
  queryEstimateSchema,
  REPORT_CSV_MEDIA_TYPE,
  REPORT_PARQUET_MEDIA_TYPE,
  reportCsvSchema,
  reportListSchema,
  reportParquetSchema,
  reportSchema,
  usageStatsQuery,
  usageStatsSchema,
  queryResultSchema,
  createInsightBody,
  updateInsightBody,
  insightSchema,
  insightListSchema,
  createDashboardBody,
  updateDashboardBody,
  dashboardSchema,
  dashboardListSchema,
  addTileBody,
  moveTileBody,
} from './analytics.api.ts';
import {
  createModelBody,
  metricsQuerySchema,
  metricsSchema,
  modelAliasesSchema,
  modelListSchema,
  modelSchema,
  modelVersionListSchema,
  predictBody,
  predictionSchema,
  retrainModelBody,
  updateAliasesBody,
} from './models.api.ts';
import {
  accountSchema,
  apiKeyCreatedSchema,
  apiKeyListSchema,
  apiKeySchema,
  changePasswordBody,
  createKeyBody,
  loginBody,
  passwordResetBody,
  rollKeyBody,
  sessionSchema,
  signupBody,
  usageSchema,
} from './accounts.api.ts';
import {
  createWebhookBody,
  updateWebhookBody,
  listDeliveriesQuery,
  deliveryListSchema,
  deliverySchema,
  deliveryDetailSchema,
  webhookCreatedSchema,
  webhookListSchema,
  webhookSchema,
  webhookSecretRotatedSchema,
  webhookTestSchema,
  replayWebhookBody,
  webhookReplaySchema,
} from './webhooks.api.ts';

export const SERVICES = ['accounts', 'sources', 'analytics', 'models', 'webhooks'] as const;
/** `gateway` operations are answered by the gateway itself. */
export type ServiceName = (typeof SERVICES)[number] | 'gateway';

/**
 * Who may call an operation: `any` = an API key with the scope, or a dashboard session (all scopes);
 * `session` = a dashboard session only (with its CSRF token on writes); `public` = no credentials.
 */
export type OperationAuth = 'any' | 'session' | 'public';

/**
 * The public /v1 surface in one table. The gateway routes and checks scopes from it, the services validate
 * with its schemas, and the OpenAPI document is generated from it, so the three cannot drift apart.
 */
export interface ApiOperation {
  operationId: string;
  method: 'get' | 'post' | 'put' | 'patch' | 'delete';
  /** OpenAPI-style template relative to /v1, e.g. /sources/{id}. */
  path: string;
  service: ServiceName;
  /** The scope an API key needs; null when any valid credential will do. */
  scope: Scope | null;
  /** Defaults to `any`. */
  auth?: OperationAuth;
  /**
   * The operation checks a password of a signed-in user: a 403 from it counts against the address's failed
   * authentications, and an address past that limit gets 429 even with a valid session.
   */
  checksPassword?: boolean;
  summary: string;
  body?: z.ZodType;
  /**
   * The body is a file in one of these media types, not JSON: the gateway streams it to the service without
   * buffering, under UPLOAD_LIMIT_BYTES instead of the JSON limit, and the service streams it to disk.
   */
  upload?: { mediaTypes: readonly string[]; schema: z.ZodType };
  query?: z.ZodType;
  /**
   * Success status → body schema (null for an empty body). `mediaType` is the success body's content type
   * when it is not `application/json` (e.g. `text/csv` for a CSV download).
   */
  success: { status: 200 | 201 | 202 | 204; schema: z.ZodType | null; mediaType?: string; alt?: readonly { status: 200 | 202; schema: z.ZodType; description?: string }[] };
  /**
   * Error statuses the operation can answer besides the ones every operation can (400, 413, 429, 500, 502,
   * 503), the ones of its credentials (401, 403) and of Idempotency-Key (409, 422; see
   * operationTakesIdempotencyKey).
   */
  errors: readonly number[];
  /** What an error status means for this operation, when more than the catalogue's general words. */
  errorNotes?: Readonly<Partial<Record<number, string>>>;
}

/**
 * Which operations take an Idempotency-Key: every POST but the /auth ones, where a replayed answer would hand
 * one client's session to another, and the streamed uploads, whose body the gateway never holds whole to
 * compare. The gateway ignores the header on the /auth ones and refuses it (400) on uploads.
 */
export function operationTakesIdempotencyKey(op: Pick<ApiOperation, 'method' | 'path' | 'upload'>): boolean {
  return op.method === 'post' && !op.path.startsWith('/auth/') && !op.upload;
}

/** An operation as its service's part of the table writes it (see `operationsOf`). */
type OperationSpec = Omit<ApiOperation, 'service' | 'scope' | 'errors'> & {
  /** A scope other than the one its method asks for (null: any valid credential will do). */
  scope?: Scope | null;
  /** Error statuses besides the 404 of an operation on a path with an id. */
  errors?: readonly number[];
};

/**
 * One service's operations. An API key needs the service's read scope for a GET and its write scope for any
 * other method, unless the operation names its own; services without scopes take `null`. An operation on a
 * path with an id answers 404 for an unknown id, or another account's.
 */
function operationsOf(service: ServiceName, scopes: { read: Scope; write: Scope } | null, specs: readonly OperationSpec[]): ApiOperation[] {
  return specs.map(({ scope, errors = [], ...spec }) => ({
    ...spec,
    service,
    scope: scope !== undefined ? scope : scopes && (spec.method === 'get' ? scopes.read : scopes.write),
    errors: spec.path.includes('{') ? [404, ...errors] : errors,
  }));
}

/** A paged list: a GET that takes the list query (limit, cursor) and answers one page of the items. */
function pagedList(spec: Pick<OperationSpec, 'operationId' | 'path' | 'auth' | 'summary'>, page: z.ZodType): OperationSpec {
  return { ...spec, method: 'get', query: listQuerySchema, success: { status: 200, schema: page } };
}

export const API_OPERATIONS: readonly ApiOperation[] = Object.freeze([
  ...operationsOf('accounts', null, [
    {
      operationId: 'signup',
      method: 'post',
      path: '/auth/signup',
      auth: 'public',
      summary: 'Create an account and its owner, and start a dashboard session (cookie).',
      body: signupBody,
      success: { status: 201, schema: sessionSchema },
      errors: [409],
    },
    {
      operationId: 'login',
      method: 'post',
      path: '/auth/login',
      auth: 'public',
      summary: 'Start a dashboard session (cookie).',
      body: loginBody,
      success: { status: 200, schema: sessionSchema },
    },
    {
      operationId: 'logout',
      method: 'post',
      path: '/auth/logout',
      auth: 'session',
      summary: 'End the dashboard session.',
      success: { status: 204, schema: null },
    },
    {
      operationId: 'getSession',
      method: 'get',
      path: '/auth/session',
      auth: 'session',
      summary: 'The signed-in user, their account and the CSRF token.',
      success: { status: 200, schema: sessionSchema },
    },
    {
      operationId: 'changePassword',
      method: 'post',
      path: '/auth/password',
      auth: 'session',
      checksPassword: true,
      summary: "Change the signed-in user's password (Settings > Account); ends the user's other sessions, this one stays.",
      body: changePasswordBody,
      success: { status: 204, schema: null },
      errorNotes: {
        403: 'The current password is wrong (`current_password_wrong`, errors[] names currentPassword; it counts like a failed login against the address), or the request came with an API key.',
      },
    },
    {
      operationId: 'resetPassword',
      method: 'post',
      path: '/auth/password-reset',
      auth: 'public',
      summary:
        "Set a new password with the one-time link (dashboard /reset-password?token=…, valid 1 h) an operator printed with the accounts CLI's reset-password-link; ends all of the user's sessions.",
      body: passwordResetBody,
      success: { status: 204, schema: null },
      errorNotes: { 400: 'The token is unknown, expired or already used (`reset_token_invalid`), or the new password breaks the sign-up rules.' },
    },
    {
      operationId: 'getAccount',
      method: 'get',
      path: '/account',
      summary: "The caller's account and plan.",
      success: { status: 200, schema: accountSchema },
    },
  ]),
  ...operationsOf('gateway', null, [
    {
      operationId: 'getUsage',
      method: 'get',
      path: '/usage',
      summary: 'Requests counted in the current 60-s window against the plan limit.',
      success: { status: 200, schema: usageSchema },
    },
  ]),
  ...operationsOf('accounts', null, [
    pagedList({ operationId: 'listKeys', path: '/keys', auth: 'session', summary: 'List API keys (Settings > API Keys), without their secrets.' }, apiKeyListSchema),
    {
      operationId: 'createKey',
      method: 'post',
      path: '/keys',
      auth: 'session',
      summary: 'Create an API key; its secret is shown only in this response.',
      body: createKeyBody,
      success: { status: 201, schema: apiKeyCreatedSchema },
    },
    {
      operationId: 'getKey',
      method: 'get',
      path: '/keys/{id}',
      auth: 'session',
      summary: 'Get one API key, without its secret.',
      success: { status: 200, schema: apiKeySchema },
    },
    {
      operationId: 'revokeKey',
      method: 'delete',
      path: '/keys/{id}',
      auth: 'session',
      summary: 'Revoke an API key; every gateway refuses it within 2 s.',
      success: { status: 204, schema: null },
    },
    {
      operationId: 'rollKey',
      method: 'post',
      path: '/keys/{id}/roll',
      auth: 'session',
      summary: 'Replace a key with a new secret; the old one keeps working for the grace period.',
      body: rollKeyBody,
      success: { status: 201, schema: apiKeyCreatedSchema },
      errors: [409],
    },
  ]),
  ...operationsOf('sources', { read: 'sources:read', write: 'sources:write' }, [
    pagedList({ operationId: 'listSources', path: '/sources', summary: 'List all connected data sources.' }, sourceListSchema),
    {
      operationId: 'createSource',
      method: 'post',
      path: '/sources',
      summary:
        'Connect a new data source: rows, an uploaded CSV/JSON/NDJSON file, an http(s) file URL, a PostgreSQL or MySQL/MariaDB table or query, or a MongoDB collection. Remote sources are checked (connection, credentials, table, file format) before they are accepted; passwords and headers are write-only.',
      body: createSourceBody,
      success: { status: 201, schema: sourceSchema },
      errors: [409, 422, 503],
      errorNotes: {
        422: "the source's address is one the service may not reach (loopback, private, link-local, cloud metadata…); errors[] names the field",
        503: 'this deployment cannot store the credentials of remote sources',
      },
    },
    {
      operationId: 'uploadSource',
      method: 'post',
      path: '/sources/upload',
      summary:
        'Create a file source from an uploaded file, streamed: the body is the file itself (text/csv, application/x-ndjson, or application/json holding an array of objects), or a multipart/form-data form with the part `file` and the fields `name` and `format`. The name and format may also come in the query. Files up to UPLOAD_LIMIT_BYTES (2 GiB by default); the first MiB is checked before the source is accepted, and the whole file loads in the background.',
      query: uploadSourceQuery,
      upload: { mediaTypes: UPLOAD_MEDIA_TYPES, schema: uploadFileSchema },
      success: { status: 201, schema: sourceSchema },
      errors: [413, 415],
    },
    {
      operationId: 'replaceSourceData',
      method: 'put',
      path: '/sources/{id}/data',
      summary:
        "Replace a file source's data (csv, json or ndjson) with an uploaded file, streamed like uploadSource and in the source's own format; the source goes back to pending and loads the new file in the background. 409 while a sync of it is running.",
      query: replaceSourceDataQuery,
      upload: { mediaTypes: UPLOAD_MEDIA_TYPES, schema: uploadFileSchema },
      success: { status: 202, schema: sourceSchema },
      errors: [409, 413, 415],
    },
    {
      operationId: 'getSource',
      method: 'get',
      path: '/sources/{id}',
      summary: 'Get one data source.',
      success: { status: 200, schema: sourceSchema },
    },
    {
      operationId: 'getSourceQuarantine',
      method: 'get',
      path: '/sources/{id}/quarantine',
      summary:
        "Download, as CSV, the rows the source's last quarantining sync set aside (schema policy quarantine): rows whose values do not fit the source's schema, or that carry a column it does not have.",
      success: { status: 200, schema: quarantineCsvSchema, mediaType: QUARANTINE_CSV_MEDIA_TYPE },
      errorNotes: { 404: 'no such source, or no sync of it has quarantined rows' },
    },
    {
      operationId: 'updateSource',
      method: 'patch',
      path: '/sources/{id}',
      summary:
        "Change a source's settings: set its sync schedule (url and database sources), or remove it with null; its schema policy; or its incremental settings (database sources; 409 while a sync of it runs). A scheduled source syncs by itself when due; a failed scheduled sync is retried with backoff before the next regular one.",
      body: updateSourceBody,
      success: { status: 200, schema: sourceSchema },
      errors: [409],
    },
    {
      operationId: 'deleteSource',
      method: 'delete',
      path: '/sources/{id}',
      summary: 'Remove a data source and its data.',
      success: { status: 204, schema: null },
    },
    {
      operationId: 'syncSource',
      method: 'post',
      path: '/sources/{id}/sync',
      summary:
        'Sync a data source again (a URL or database source is pulled again from its origin); it goes back to pending and becomes ready or failed in the background. An incremental source pulls only new and changed rows unless the body says { "mode": "full" }, which pulls everything and restarts its cursor (409 while a sync of it runs).',
      body: syncSourceBody,
      success: { status: 202, schema: sourceSchema },
      errors: [409],
    },
  ]),
  ...operationsOf('analytics', { read: 'analytics:read', write: 'analytics:write' }, [
    {
      operationId: 'getOverview',
      method: 'get',
      path: '/analytics/overview',
      summary: 'Get the analytics overview and summary.',
      success: { status: 200, schema: overviewSchema },
    },
    {
      operationId: 'getUsageStats',
      method: 'get',
      path: '/analytics/usage',
      summary:
        "The account's calls per API key (the dashboard apart) or per operation over the last hour, day or 30 days: requests, 4xx, 5xx, 429s, error rate and a time series. Counts arrive from the gateway every few seconds.",
      query: usageStatsQuery,
      success: { status: 200, schema: usageStatsSchema },
    },
    pagedList({ operationId: 'listReports', path: '/analytics/reports', summary: 'List reports, newest first.' }, reportListSchema),
    {
      operationId: 'getReport',
      method: 'get',
      path: '/analytics/reports/{id}',
      summary: 'Retrieve one report by identifier.',
      success: { status: 200, schema: reportSchema },
    },
    {
      operationId: 'exportReportCsv',
      method: 'get',
      path: '/analytics/reports/{id}/export.csv',
      summary: "Download every row of a completed report's result as CSV (text/csv), streamed, without the JSON answer's row cap.",
      success: { status: 200, schema: reportCsvSchema, mediaType: REPORT_CSV_MEDIA_TYPE },
      errors: [409],
    },
    {
      operationId: 'exportReportParquet',
      method: 'get',
      path: '/analytics/reports/{id}/export.parquet',
      summary: "Download every row of a completed report's result as a Parquet file, without the JSON answer's row cap.",
      success: { status: 200, schema: reportParquetSchema, mediaType: REPORT_PARQUET_MEDIA_TYPE },
      errors: [409],
    },
    {
      operationId: 'runQuery',
      method: 'post',
      path: '/analytics/query',
      summary:
        'Execute a custom analytics query; the result is saved as a report. With `saveReport: false`, answer the result itself and save nothing; with `dryRun: true`, only validate it and estimate what it would read.',
      body: querySchema,
      success: {
        status: 201,
        schema: reportSchema,
        alt: [
          { status: 202, schema: reportSchema },
          {
            status: 200,
            schema: z.union([queryEstimateSchema, queryResultSchema]).meta({ id: 'UnsavedQueryAnswer' }),
            description:
              'A dry run (`dryRun: true`): the estimate and plan (QueryEstimate); nothing ran. A run without a report (`saveReport: false`): the result (QueryResult). Neither saves a report.',
          },
        ],
      },
      errors: [404, 409, 422],
      errorNotes: {
        404: 'the source does not exist',
        409: 'the source is not ready or has no data yet, or the account already runs as many queries as it may at once',
        422: "the query would read more bytes than one query may on the account's plan (the detail names the limit), or, with `saveReport: false`, it failed (query_failed)",
      },
    },
    pagedList({ operationId: 'listInsights', path: '/analytics/insights', summary: 'List saved insights (named queries), newest first.' }, insightListSchema),
    {
      operationId: 'createInsight',
      method: 'post',
      path: '/analytics/insights',
      summary: 'Save a query as a named insight, to run again and pin to dashboards. The query is checked against its source when it runs, not when it is saved.',
      body: createInsightBody,
      success: { status: 201, schema: insightSchema },
    },
    {
      operationId: 'getInsight',
      method: 'get',
      path: '/analytics/insights/{id}',
      summary: 'Retrieve one insight.',
      success: { status: 200, schema: insightSchema },
    },
    {
      operationId: 'updateInsight',
      method: 'patch',
      path: '/analytics/insights/{id}',
      summary: 'Rename an insight, or replace its query or chart; the dashboards it is pinned to show the change.',
      body: updateInsightBody,
      success: { status: 200, schema: insightSchema },
    },
    {
      operationId: 'deleteInsight',
      method: 'delete',
      path: '/analytics/insights/{id}',
      summary: 'Delete an insight; its tiles are removed from every dashboard it was pinned to.',
      success: { status: 204, schema: null },
    },
    {
      operationId: 'runInsight',
      method: 'post',
      path: '/analytics/insights/{id}/run',
      scope: 'analytics:read',
      summary: "Run an insight's query on its source's current data and answer the result; no report is saved.",
      success: { status: 200, schema: queryResultSchema },
      errors: [409, 422],
      errorNotes: {
        404: 'the insight, or its source, does not exist',
        409: 'the source is not ready or has no data yet, or the account already runs as many queries as it may at once',
        422: 'the query would read more than the plan allows per query, or it failed (query_failed; the detail says why, e.g. a field the source no longer has)',
      },
    },
    pagedList({ operationId: 'listDashboards', path: '/analytics/dashboards', summary: 'List dashboards, newest first, without their tiles.' }, dashboardListSchema),
    {
      operationId: 'createDashboard',
      method: 'post',
      path: '/analytics/dashboards',
      summary: 'Create an empty named dashboard; pin insights to it with addDashboardTile.',
      body: createDashboardBody,
      success: { status: 201, schema: dashboardSchema },
    },
    {
      operationId: 'getDashboard',
      method: 'get',
      path: '/analytics/dashboards/{id}',
      summary: "Retrieve a dashboard with its tiles and the insight each shows; run each tile's insight (runInsight) for its current result.",
      success: { status: 200, schema: dashboardSchema },
    },
    {
      operationId: 'updateDashboard',
      method: 'patch',
      path: '/analytics/dashboards/{id}',
      summary: 'Rename a dashboard.',
      body: updateDashboardBody,
      success: { status: 200, schema: dashboardSchema },
    },
    {
      operationId: 'deleteDashboard',
      method: 'delete',
      path: '/analytics/dashboards/{id}',
      summary: 'Delete a dashboard; its insights stay.',
      success: { status: 204, schema: null },
    },
    {
      operationId: 'addDashboardTile',
      method: 'post',
      path: '/analytics/dashboards/{id}/tiles',
      summary:
        'Pin an insight to a dashboard as a tile on its 12-column grid. Without x and y the tile takes the first free place in reading order (beside the last tile when its row has room, else below); tiles it would overlap move down to make room.',
      body: addTileBody,
      success: { status: 201, schema: dashboardSchema },
      errors: [409],
      errorNotes: {
        404: 'the dashboard or the insight does not exist',
        409: 'the dashboard already holds the most tiles it may (dashboard_full), or changed meanwhile (dashboard_changed)',
      },
    },
    {
      operationId: 'moveDashboardTile',
      method: 'patch',
      path: '/analytics/dashboards/{id}/tiles/{tileId}',
      summary: 'Move or resize a tile; tiles it would overlap move down to make room.',
      body: moveTileBody,
      success: { status: 200, schema: dashboardSchema },
      errors: [409],
      errorNotes: { 404: 'the dashboard or the tile does not exist', 409: 'the dashboard changed meanwhile (dashboard_changed)' },
    },
    {
      operationId: 'removeDashboardTile',
      method: 'delete',
      path: '/analytics/dashboards/{id}/tiles/{tileId}',
      summary: 'Remove a tile from a dashboard; its insight stays.',
      success: { status: 200, schema: dashboardSchema },
      errors: [409],
      errorNotes: { 404: 'the dashboard or the tile does not exist', 409: 'the dashboard changed meanwhile (dashboard_changed)' },
    },
  ]),
  ...operationsOf('models', { read: 'models:read', write: 'models:write' }, [
    pagedList({ operationId: 'listModels', path: '/models', summary: 'List all available AI models.' }, modelListSchema),
    {
      operationId: 'createModel',
      method: 'post',
      path: '/models',
      summary:
        'Train a model on a data source (202: it trains in the background; poll the Location until ready or failed), or upload an ONNX model (201: verified by loading it, ready at once).',
      body: createModelBody,
      success: { status: 201, schema: modelSchema, alt: [{ status: 202, schema: modelSchema }] },
      errors: [404, 409, 422, 503],
      errorNotes: { 404: 'the source to train on does not exist', 409: 'the source to train on is not ready' },
    },
    {
      operationId: 'getModel',
      method: 'get',
      path: '/models/{id}',
      summary: 'Get one model.',
      success: { status: 200, schema: modelSchema },
    },
    {
      operationId: 'deleteModel',
      method: 'delete',
      path: '/models/{id}',
      summary: 'Delete a trained or uploaded model (a training job stops); built-in models answer 409.',
      success: { status: 204, schema: null },
      errors: [409],
    },
    {
      operationId: 'predict',
      method: 'post',
      path: '/models/{id}/predict',
      summary:
        'Run a prediction on a model; inputs are validated against its features, and batches are accepted. The version the `production` alias points at answers, unless the body names a `version` or an `alias`.',
      body: predictBody,
      success: { status: 200, schema: predictionSchema },
      errors: [409, 422, 503],
      errorNotes: {
        404: 'the model, or the named version or alias, does not exist',
        409: 'the model version is not ready (still training, or failed)',
        422: 'the model could not compute an answer for these inputs (an ONNX model failed or ran too long, or an output is not finite)',
      },
    },
    {
      operationId: 'getModelMetrics',
      method: 'get',
      path: '/models/{id}/metrics',
      summary: 'Get the performance metrics of one version of a model (by default the one `production` points at; `version` or `alias` picks another).',
      query: metricsQuerySchema,
      success: { status: 200, schema: metricsSchema },
    },
    {
      operationId: 'listModelVersions',
      method: 'get',
      path: '/models/{id}/versions',
      summary: 'List the versions of a model, newest first, each with its status, training, evaluation and the aliases pointing at it.',
      success: { status: 200, schema: modelVersionListSchema },
    },
    {
      operationId: 'retrainModel',
      method: 'post',
      path: '/models/{id}/versions',
      summary:
        'Retrain a trained model on its source’s current data: version n+1 trains in the background (202; the model shows it as its latest version) while the aliases keep pointing at the versions they did.',
      body: retrainModelBody,
      success: { status: 202, schema: modelSchema },
      errors: [409, 503],
      errorNotes: { 404: 'the model or its source does not exist', 409: 'a built-in or ONNX model, a version already training, or a source that is not ready' },
    },
    {
      operationId: 'updateModelAliases',
      method: 'post',
      path: '/models/{id}/aliases',
      summary: 'Point aliases at versions (or remove them with null), all in one atomic write; only ready versions can be pointed at.',
      body: updateAliasesBody,
      success: { status: 200, schema: modelAliasesSchema },
      errors: [409],
      errorNotes: { 409: 'a built-in model, or a version that is not ready' },
    },
  ]),
  ...operationsOf('webhooks', { read: 'webhooks:read', write: 'webhooks:write' }, [
    pagedList({ operationId: 'listWebhooks', path: '/webhooks', summary: 'List registered webhook endpoints.' }, webhookListSchema),
    {
      operationId: 'createWebhook',
      method: 'post',
      path: '/webhooks',
      summary: 'Register a new webhook endpoint; the signing secret is returned once.',
      body: createWebhookBody,
      success: { status: 201, schema: webhookCreatedSchema },
      errors: [409, 422],
      errorNotes: { 422: "the URL's target is not allowed (errors[] says why), or the account has as many endpoints as it may" },
    },
    {
      operationId: 'getWebhook',
      method: 'get',
      path: '/webhooks/{id}',
      summary: 'Get one webhook endpoint.',
      success: { status: 200, schema: webhookSchema },
    },
    {
      operationId: 'updateWebhook',
      method: 'patch',
      path: '/webhooks/{id}',
      summary:
        "Change an endpoint's URL, events, description, filter, ordering or rate limit (rateLimitPerSecond, null to lift it); fields left out keep their value. A new URL is checked as at registration.",
      body: updateWebhookBody,
      success: { status: 200, schema: webhookSchema },
      errors: [422],
      errorNotes: { 422: "the new URL's target is not allowed (errors[] says why)" },
    },
    {
      operationId: 'deleteWebhook',
      method: 'delete',
      path: '/webhooks/{id}',
      summary: 'Remove a webhook by identifier.',
      success: { status: 204, schema: null },
    },
    {
      operationId: 'listDeliveries',
      method: 'get',
      path: '/webhooks/{id}/deliveries',
      summary:
        'List the messages sent to a webhook endpoint, newest first, with every delivery attempt; optionally only those in one status, of one event type, or whose event happened in [since, until).',
      query: listDeliveriesQuery,
      success: { status: 200, schema: deliveryListSchema },
    },
    {
      operationId: 'getDelivery',
      method: 'get',
      path: '/webhooks/{id}/deliveries/{messageId}',
      summary:
        'Get one message sent to a webhook endpoint (by its event id, the webhook-id): the payload, and for every attempt the request headers sent, the status, latency, response headers and the start of the response body.',
      success: { status: 200, schema: deliveryDetailSchema },
    },
    {
      operationId: 'sendTestEvent',
      method: 'post',
      path: '/webhooks/{id}/test',
      summary: 'Send a webhook.test event to this endpoint through the normal delivery path.',
      success: { status: 202, schema: webhookTestSchema },
      errors: [409],
    },
    {
      operationId: 'rotateWebhookSecret',
      method: 'post',
      path: '/webhooks/{id}/rotate-secret',
      summary: 'Issue a new signing secret (returned once); deliveries are signed with the old one too until previousSecretExpiresAt.',
      success: { status: 200, schema: webhookSecretRotatedSchema },
      errors: [409],
    },
    {
      operationId: 'enableWebhook',
      method: 'post',
      path: '/webhooks/{id}/enable',
      summary:
        'Enable a disabled endpoint again (after a 410 or days of failed deliveries): new events go to it from now on; messages missed meanwhile (recorded as skipped, or cancelled) can be replayed (POST /webhooks/{id}/replay) or redelivered one by one. Enabling an enabled endpoint changes nothing.',
      success: { status: 200, schema: webhookSchema },
      errors: [422],
    },
    {
      operationId: 'redeliverMessage',
      method: 'post',
      path: '/webhooks/{id}/deliveries/{messageId}/redeliver',
      summary: 'Send a message (by its event id, the webhook-id) to this endpoint again, as a new series of attempts.',
      success: { status: 202, schema: deliverySchema },
      errors: [409],
    },
    {
      operationId: 'retryDelivery',
      method: 'post',
      path: '/webhooks/{id}/deliveries/{messageId}/retry',
      summary:
        "Make a message's waiting retry due now instead of at nextAttemptAt; it stays in its current series of attempts. A receiver's Retry-After still holds the endpoint until it ends. Only for a pending message: a finished one is sent again with redeliver.",
      success: { status: 202, schema: deliverySchema },
      errors: [409],
      errorNotes: { 409: 'the message is not pending (webhook_delivery_not_pending), or the endpoint is disabled (webhook_disabled)' },
    },
    {
      operationId: 'replayWebhook',
      method: 'post',
      path: '/webhooks/{id}/replay',
      summary:
        'Send again every message of this endpoint since a time (by event time, oldest first) that did not reach it: failed, cancelled, or skipped while the endpoint was disabled. Messages delivered or still being attempted are left alone, so repeating the call sends nothing twice. At most 1000 messages per call; hasMore and nextSince tell where to go on.',
      body: replayWebhookBody,
      success: { status: 202, schema: webhookReplaySchema },
      errors: [409],
    },
  ]),
]);

export interface MatchedOperation {
  operation: ApiOperation;
  params: Record<string, string>;
}

const compiled = API_OPERATIONS.map((operation) => {
  const names: string[] = [];
  const pattern = operation.path
    .split(/(\{\w+\})/)
    .map((part) => {
      const param = /^\{(\w+)\}$/.exec(part);
      if (!param) return part.replace(/[.*+?^$()|[\]\\]/g, '\\$&');
      names.push(param[1]!);
      return '([^/]+)';
    })
    .join('');
  return { operation, names, regex: new RegExp(`^${pattern}/?$`) };
});

const METHOD_ORDER = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'];

/** The path parameters of a match, decoded; null when one is malformed percent-encoding (which names nothing). */
function paramsOf(c: (typeof compiled)[number], m: RegExpExecArray): Record<string, string> | null {
  const params: Record<string, string> = {};
  try {
    c.names.forEach((n, i) => (params[n] = decodeURIComponent(m[i + 1] ?? '')));
  } catch {
    return null;
  }
  return params;
}

/**
 * Finds the operation for a method and a path relative to /v1 (every request at the gateway: it stops at
 * the first match). HEAD is GET without the body (RFC 9110 §9.3.2), so it finds the GET operation.
 */
export function matchOperation(method: string, path: string): { match: MatchedOperation | null } {
  const wanted = method.toLowerCase() === 'head' ? 'get' : method.toLowerCase();
  for (const c of compiled) {
    if (c.operation.method !== wanted) continue;
    const m = c.regex.exec(path);
    if (!m) continue;
    const params = paramsOf(c, m);
    return { match: params && { operation: c.operation, params } };
  }
  return { match: null };
}

/** The methods a path takes, for the Allow header of a 405; empty when no operation has the path (a 404). */
export function allowedMethods(path: string): string[] {
  const allowed = new Set<string>();
  for (const c of compiled) {
    const m = c.regex.exec(path);
    if (m && paramsOf(c, m)) allowed.add(c.operation.method.toUpperCase());
  }
  if (allowed.has('GET')) allowed.add('HEAD');
  return METHOD_ORDER.filter((x) => allowed.has(x));
}
