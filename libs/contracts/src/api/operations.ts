import { z } from 'zod';
import operationDocs from './operation-docs.json' with { type: 'json' };
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

/** One operation of the public /v1 surface (see API_OPERATIONS). */
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

/** An operation as its service's part of the table writes it (see `operationsOf`); its words are in `operation-docs.json`. */
type OperationSpec = Omit<ApiOperation, 'service' | 'scope' | 'errors' | 'summary' | 'errorNotes'> & {
  /** A scope other than the one its method asks for (null: any valid credential will do). */
  scope?: Scope | null;
  /** Error statuses besides the 404 of an operation on a path with an id. */
  errors?: readonly number[];
};

interface OperationDocs {
  summary: string;
  errorNotes?: Readonly<Partial<Record<number, string>>>;
}

/**
 * Reads the operations' words (their summaries and error notes, prose for the API reference kept as data in
 * `operation-docs.json`), once when the table loads: every operation needs a summary, and every entry an
 * operation, so a renamed or removed operation cannot leave its words behind or go out without any.
 */
export function readOperationDocs(
  docs: Record<string, { summary: string; errorNotes?: Record<string, string> }>,
  operationIds: readonly string[],
): ReadonlyMap<string, OperationDocs> {
  const byId = new Map<string, OperationDocs>();
  for (const id of operationIds) {
    const entry = docs[id];
    if (!entry?.summary) throw new Error(`operation-docs.json: ${id} has no summary`);
    const { summary, errorNotes } = entry;
    for (const status of Object.keys(errorNotes ?? {})) if (!/^[45]\d\d$/.test(status)) throw new Error(`operation-docs.json: ${id} notes ${status}, not an error status`);
    byId.set(id, { summary, ...(errorNotes ? { errorNotes } : {}) });
  }
  const orphans = Object.keys(docs).filter((id) => !byId.has(id));
  if (orphans.length) throw new Error(`operation-docs.json: no operation ${orphans.join(', ')}`);
  return byId;
}

/**
 * One service's operations. An API key needs the service's read scope for a GET and its write scope for any
 * other method, unless the operation names its own; services without scopes take `null`. An operation on a
 * path with an id answers 404 for an unknown id, or another account's.
 */
function operationsOf(service: ServiceName, scopes: { read: Scope; write: Scope } | null, specs: readonly OperationSpec[]): Omit<ApiOperation, keyof OperationDocs>[] {
  return specs.map(({ scope, errors = [], ...spec }) => ({
    ...spec,
    service,
    scope: scope !== undefined ? scope : scopes && (spec.method === 'get' ? scopes.read : scopes.write),
    errors: spec.path.includes('{') ? [404, ...errors] : errors,
  }));
}

/** A paged list: a GET that takes the list query (limit, cursor) and answers one page of the items. */
function pagedList(spec: Pick<OperationSpec, 'operationId' | 'path' | 'auth'>, page: z.ZodType): OperationSpec {
  return { ...spec, method: 'get', query: listQuerySchema, success: { status: 200, schema: page } };
}

/**
 * A collection's usual five, named after its items (`Insight`, `Insights`): a paged list and create at
 * `path`, and get, update (PATCH) and delete at `path/{id}`.
 */
function collection(c: { item: string; items: string; path: string; schema: z.ZodType; page: z.ZodType; create: z.ZodType; update: z.ZodType }): OperationSpec[] {
  const one = `${c.path}/{id}`;
  return [
    pagedList({ operationId: `list${c.items}`, path: c.path }, c.page),
    { operationId: `create${c.item}`, method: 'post', path: c.path, body: c.create, success: { status: 201, schema: c.schema } },
    { operationId: `get${c.item}`, method: 'get', path: one, success: { status: 200, schema: c.schema } },
    { operationId: `update${c.item}`, method: 'patch', path: one, body: c.update, success: { status: 200, schema: c.schema } },
    { operationId: `delete${c.item}`, method: 'delete', path: one, success: { status: 204, schema: null } },
  ];
}

/** A data file streamed as the request body, in any of the formats a file source takes. */
const FILE_UPLOAD = { mediaTypes: UPLOAD_MEDIA_TYPES, schema: uploadFileSchema };

const TABLE = [
  ...operationsOf('accounts', null, [
    { operationId: 'signup', method: 'post', path: '/auth/signup', auth: 'public', body: signupBody, success: { status: 201, schema: sessionSchema }, errors: [409] },
    { operationId: 'login', method: 'post', path: '/auth/login', auth: 'public', body: loginBody, success: { status: 200, schema: sessionSchema } },
    { operationId: 'logout', method: 'post', path: '/auth/logout', auth: 'session', success: { status: 204, schema: null } },
    { operationId: 'getSession', method: 'get', path: '/auth/session', auth: 'session', success: { status: 200, schema: sessionSchema } },
    {
      operationId: 'changePassword',
      method: 'post',
      path: '/auth/password',
      auth: 'session',
      checksPassword: true,
      body: changePasswordBody,
      success: { status: 204, schema: null },
    },
    { operationId: 'resetPassword', method: 'post', path: '/auth/password-reset', auth: 'public', body: passwordResetBody, success: { status: 204, schema: null } },
    { operationId: 'getAccount', method: 'get', path: '/account', success: { status: 200, schema: accountSchema } },
  ]),
  ...operationsOf('gateway', null, [{ operationId: 'getUsage', method: 'get', path: '/usage', success: { status: 200, schema: usageSchema } }]),
  ...operationsOf('accounts', null, [
    pagedList({ operationId: 'listKeys', path: '/keys', auth: 'session' }, apiKeyListSchema),
    { operationId: 'createKey', method: 'post', path: '/keys', auth: 'session', body: createKeyBody, success: { status: 201, schema: apiKeyCreatedSchema } },
    { operationId: 'getKey', method: 'get', path: '/keys/{id}', auth: 'session', success: { status: 200, schema: apiKeySchema } },
    { operationId: 'revokeKey', method: 'delete', path: '/keys/{id}', auth: 'session', success: { status: 204, schema: null } },
    { operationId: 'rollKey', method: 'post', path: '/keys/{id}/roll', auth: 'session', body: rollKeyBody, success: { status: 201, schema: apiKeyCreatedSchema }, errors: [409] },
  ]),
  ...operationsOf('sources', { read: 'sources:read', write: 'sources:write' }, [
    pagedList({ operationId: 'listSources', path: '/sources' }, sourceListSchema),
    { operationId: 'createSource', method: 'post', path: '/sources', body: createSourceBody, success: { status: 201, schema: sourceSchema }, errors: [409, 422, 503] },
    {
      operationId: 'uploadSource',
      method: 'post',
      path: '/sources/upload',
      query: uploadSourceQuery,
      upload: FILE_UPLOAD,
      success: { status: 201, schema: sourceSchema },
      errors: [413, 415],
    },
    {
      operationId: 'replaceSourceData',
      method: 'put',
      path: '/sources/{id}/data',
      query: replaceSourceDataQuery,
      upload: FILE_UPLOAD,
      success: { status: 202, schema: sourceSchema },
      errors: [409, 413, 415],
    },
    { operationId: 'getSource', method: 'get', path: '/sources/{id}', success: { status: 200, schema: sourceSchema } },
    {
      operationId: 'getSourceQuarantine',
      method: 'get',
      path: '/sources/{id}/quarantine',
      success: { status: 200, schema: quarantineCsvSchema, mediaType: QUARANTINE_CSV_MEDIA_TYPE },
    },
    { operationId: 'updateSource', method: 'patch', path: '/sources/{id}', body: updateSourceBody, success: { status: 200, schema: sourceSchema }, errors: [409] },
    { operationId: 'deleteSource', method: 'delete', path: '/sources/{id}', success: { status: 204, schema: null } },
    { operationId: 'syncSource', method: 'post', path: '/sources/{id}/sync', body: syncSourceBody, success: { status: 202, schema: sourceSchema }, errors: [409] },
  ]),
  ...operationsOf('analytics', { read: 'analytics:read', write: 'analytics:write' }, [
    { operationId: 'getOverview', method: 'get', path: '/analytics/overview', success: { status: 200, schema: overviewSchema } },
    { operationId: 'getUsageStats', method: 'get', path: '/analytics/usage', query: usageStatsQuery, success: { status: 200, schema: usageStatsSchema } },
    pagedList({ operationId: 'listReports', path: '/analytics/reports' }, reportListSchema),
    { operationId: 'getReport', method: 'get', path: '/analytics/reports/{id}', success: { status: 200, schema: reportSchema } },
    {
      operationId: 'exportReportCsv',
      method: 'get',
      path: '/analytics/reports/{id}/export.csv',
      success: { status: 200, schema: reportCsvSchema, mediaType: REPORT_CSV_MEDIA_TYPE },
      errors: [409],
    },
    {
      operationId: 'exportReportParquet',
      method: 'get',
      path: '/analytics/reports/{id}/export.parquet',
      success: { status: 200, schema: reportParquetSchema, mediaType: REPORT_PARQUET_MEDIA_TYPE },
      errors: [409],
    },
    {
      operationId: 'runQuery',
      method: 'post',
      path: '/analytics/query',
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
    },
    ...collection({
      item: 'Insight',
      items: 'Insights',
      path: '/analytics/insights',
      schema: insightSchema,
      page: insightListSchema,
      create: createInsightBody,
      update: updateInsightBody,
    }),
    {
      operationId: 'runInsight',
      method: 'post',
      path: '/analytics/insights/{id}/run',
      scope: 'analytics:read',
      success: { status: 200, schema: queryResultSchema },
      errors: [409, 422],
    },
    ...collection({
      item: 'Dashboard',
      items: 'Dashboards',
      path: '/analytics/dashboards',
      schema: dashboardSchema,
      page: dashboardListSchema,
      create: createDashboardBody,
      update: updateDashboardBody,
    }),
    {
      operationId: 'addDashboardTile',
      method: 'post',
      path: '/analytics/dashboards/{id}/tiles',
      body: addTileBody,
      success: { status: 201, schema: dashboardSchema },
      errors: [409],
    },
    {
      operationId: 'moveDashboardTile',
      method: 'patch',
      path: '/analytics/dashboards/{id}/tiles/{tileId}',
      body: moveTileBody,
      success: { status: 200, schema: dashboardSchema },
      errors: [409],
    },
    { operationId: 'removeDashboardTile', method: 'delete', path: '/analytics/dashboards/{id}/tiles/{tileId}', success: { status: 200, schema: dashboardSchema }, errors: [409] },
  ]),
  ...operationsOf('models', { read: 'models:read', write: 'models:write' }, [
    pagedList({ operationId: 'listModels', path: '/models' }, modelListSchema),
    {
      operationId: 'createModel',
      method: 'post',
      path: '/models',
      body: createModelBody,
      success: { status: 201, schema: modelSchema, alt: [{ status: 202, schema: modelSchema }] },
      errors: [404, 409, 422, 503],
    },
    { operationId: 'getModel', method: 'get', path: '/models/{id}', success: { status: 200, schema: modelSchema } },
    { operationId: 'deleteModel', method: 'delete', path: '/models/{id}', success: { status: 204, schema: null }, errors: [409] },
    { operationId: 'predict', method: 'post', path: '/models/{id}/predict', body: predictBody, success: { status: 200, schema: predictionSchema }, errors: [409, 422, 503] },
    { operationId: 'getModelMetrics', method: 'get', path: '/models/{id}/metrics', query: metricsQuerySchema, success: { status: 200, schema: metricsSchema } },
    { operationId: 'listModelVersions', method: 'get', path: '/models/{id}/versions', success: { status: 200, schema: modelVersionListSchema } },
    { operationId: 'retrainModel', method: 'post', path: '/models/{id}/versions', body: retrainModelBody, success: { status: 202, schema: modelSchema }, errors: [409, 503] },
    {
      operationId: 'updateModelAliases',
      method: 'post',
      path: '/models/{id}/aliases',
      body: updateAliasesBody,
      success: { status: 200, schema: modelAliasesSchema },
      errors: [409],
    },
  ]),
  ...operationsOf('webhooks', { read: 'webhooks:read', write: 'webhooks:write' }, [
    pagedList({ operationId: 'listWebhooks', path: '/webhooks' }, webhookListSchema),
    { operationId: 'createWebhook', method: 'post', path: '/webhooks', body: createWebhookBody, success: { status: 201, schema: webhookCreatedSchema }, errors: [409, 422] },
    { operationId: 'getWebhook', method: 'get', path: '/webhooks/{id}', success: { status: 200, schema: webhookSchema } },
    { operationId: 'updateWebhook', method: 'patch', path: '/webhooks/{id}', body: updateWebhookBody, success: { status: 200, schema: webhookSchema }, errors: [422] },
    { operationId: 'deleteWebhook', method: 'delete', path: '/webhooks/{id}', success: { status: 204, schema: null } },
    { operationId: 'listDeliveries', method: 'get', path: '/webhooks/{id}/deliveries', query: listDeliveriesQuery, success: { status: 200, schema: deliveryListSchema } },
    { operationId: 'getDelivery', method: 'get', path: '/webhooks/{id}/deliveries/{messageId}', success: { status: 200, schema: deliveryDetailSchema } },
    { operationId: 'sendTestEvent', method: 'post', path: '/webhooks/{id}/test', success: { status: 202, schema: webhookTestSchema }, errors: [409] },
    { operationId: 'rotateWebhookSecret', method: 'post', path: '/webhooks/{id}/rotate-secret', success: { status: 200, schema: webhookSecretRotatedSchema }, errors: [409] },
    { operationId: 'enableWebhook', method: 'post', path: '/webhooks/{id}/enable', success: { status: 200, schema: webhookSchema }, errors: [422] },
    { operationId: 'redeliverMessage', method: 'post', path: '/webhooks/{id}/deliveries/{messageId}/redeliver', success: { status: 202, schema: deliverySchema }, errors: [409] },
    { operationId: 'retryDelivery', method: 'post', path: '/webhooks/{id}/deliveries/{messageId}/retry', success: { status: 202, schema: deliverySchema }, errors: [409] },
    { operationId: 'replayWebhook', method: 'post', path: '/webhooks/{id}/replay', body: replayWebhookBody, success: { status: 202, schema: webhookReplaySchema }, errors: [409] },
  ]),
];
const DOCS = readOperationDocs(
  operationDocs,
  TABLE.map((op) => op.operationId),
);

/**
 * The public /v1 surface in one table. The gateway routes and checks scopes from it, the services validate
 * with its schemas, and the OpenAPI document is generated from it, so the three cannot drift apart.
 */
export const API_OPERATIONS: readonly ApiOperation[] = Object.freeze(TABLE.map((op) => ({ ...op, ...DOCS.get(op.operationId)! })));

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
