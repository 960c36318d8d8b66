import type {
  Account,
  AnalyticsQueryInput,
  QueryEstimate,
  DeliveryFilters,
  Delivery,
  DeliveryDetail,
  FileFormat,
  ListParams,
  Model,
  ModelAliases,
  ModelMetrics,
  ModelMetricsParams,
  RetrainModelInput,
  UpdateModelAliasesInput,
  SyncSourceInput,
  OperationId,
  Overview,
  UsageStats,
  UsageStatsParams,
  Page,
  Report,
  QueryResult,
  Dashboard,
  MoveDashboardTileInput,
  RequestBody,
  ResultOf,
  Source,
  UploadFile,
  Usage,
} from './operations.ts';
import { Transport, type ApiPromise, type CallInput, type DapClientOptions, type RequestOptions } from './transport.ts';

export interface ListAllParams {
  /** Page size for each request (1–100); the iterator still yields one item at a time. */
  pageSize?: number;
  /** Stop after this many items. */
  max?: number;
}

/**
 * Walks a list from the newest item, page by page, following `nextCursor` until `hasMore` is false:
 * `for await (const s of client.sources.listAll()) …`.
 */
export async function* paginate<T>(fetchPage: (params: ListParams) => PromiseLike<Page<T>>, params: ListAllParams = {}): AsyncGenerator<T, void, undefined> {
  let cursor: string | undefined;
  let yielded = 0;
  for (;;) {
    const page = await fetchPage({ limit: params.pageSize ?? 100, ...(cursor ? { cursor } : {}) });
    for (const item of page.data) {
      if (params.max !== undefined && yielded >= params.max) return;
      yield item;
      yielded++;
    }
    if (!page.hasMore || !page.nextCursor) return;
    cursor = page.nextCursor;
  }
}

/**
 * Which client method serves each operation an API key can call, so a test can prove that every one has a
 * method (an operation added to the contracts table without an SDK method fails that test). The dashboard's
 * session-only and public sign-in operations are not the SDK's; `request` still reaches them by id.
 */
export const METHOD_OF_OPERATION = {
  getAccount: 'account.get',
  getUsage: 'account.usage',
  listSources: 'sources.list',
  createSource: 'sources.create',
  getSource: 'sources.get',
  updateSource: 'sources.update',
  getSourceQuarantine: 'sources.quarantine',
  deleteSource: 'sources.delete',
  syncSource: 'sources.sync',
  uploadSource: 'sources.upload',
  replaceSourceData: 'sources.replaceData',
  getOverview: 'analytics.overview',
  getUsageStats: 'analytics.usage',
  listReports: 'analytics.listReports',
  getReport: 'analytics.getReport',
  exportReportCsv: 'analytics.exportReportCsv',
  exportReportParquet: 'analytics.exportReportParquet',
  runQuery: 'analytics.query',
  listInsights: 'analytics.listInsights',
  createInsight: 'analytics.createInsight',
  getInsight: 'analytics.getInsight',
  updateInsight: 'analytics.updateInsight',
  deleteInsight: 'analytics.deleteInsight',
  runInsight: 'analytics.runInsight',
  listDashboards: 'analytics.listDashboards',
  createDashboard: 'analytics.createDashboard',
  getDashboard: 'analytics.getDashboard',
  updateDashboard: 'analytics.renameDashboard',
  deleteDashboard: 'analytics.deleteDashboard',
  addDashboardTile: 'analytics.addTile',
  moveDashboardTile: 'analytics.moveTile',
  removeDashboardTile: 'analytics.removeTile',
  listModels: 'models.list',
  createModel: 'models.create',
  getModel: 'models.get',
  deleteModel: 'models.delete',
  predict: 'models.predict',
  getModelMetrics: 'models.metrics',
  listModelVersions: 'models.listVersions',
  retrainModel: 'models.retrain',
  updateModelAliases: 'models.setAliases',
  listWebhooks: 'webhooks.list',
  createWebhook: 'webhooks.create',
  getWebhook: 'webhooks.get',
  updateWebhook: 'webhooks.update',
  deleteWebhook: 'webhooks.delete',
  listDeliveries: 'webhooks.listDeliveries',
  getDelivery: 'webhooks.getDelivery',
  retryDelivery: 'webhooks.retryNow',
  sendTestEvent: 'webhooks.sendTest',
  rotateWebhookSecret: 'webhooks.rotateSecret',
  enableWebhook: 'webhooks.enable',
  redeliverMessage: 'webhooks.redeliver',
  replayWebhook: 'webhooks.replay',
} as const satisfies Partial<Record<OperationId, string>>;

export type DapClient = ReturnType<typeof createDapClient>;

export interface UploadOptions {
  /** csv, json (an array of objects) or ndjson; by default a Blob's type, then a File's name extension. */
  format?: FileFormat;
}

const CONTENT_TYPE_OF: Record<FileFormat, string> = { csv: 'text/csv', json: 'application/json', ndjson: 'application/x-ndjson' };
const FORMAT_OF_TYPE: Record<string, FileFormat> = { 'text/csv': 'csv', 'application/json': 'json', 'application/x-ndjson': 'ndjson', 'application/ndjson': 'ndjson' };
const FORMAT_OF_EXTENSION: Record<string, FileFormat> = { csv: 'csv', json: 'json', ndjson: 'ndjson', jsonl: 'ndjson' };

/** The format of an upload: the one given, else what a Blob or File says of itself. */
function formatOfUpload(file: UploadFile, format: FileFormat | undefined): FileFormat {
  if (format) return format;
  if (file instanceof Blob) {
    const byType = FORMAT_OF_TYPE[file.type.split(';')[0]!.trim().toLowerCase()];
    const name = (file as Blob & { name?: string }).name;
    const byName = name ? FORMAT_OF_EXTENSION[name.split('.').pop()!.toLowerCase()] : undefined;
    if (byType ?? byName) return (byType ?? byName)!;
  }
  throw new TypeError('give the upload format (csv, json or ndjson): the file does not say');
}

/** A client for one API key. Every method returns an ApiPromise: await it, or `.withResponse()`. */
export function createDapClient(options: DapClientOptions) {
  const t = new Transport(options);
  const byId = (id: string) => ({ params: { id } });
  /** An operation on one item by its id alone (get, delete, …). */
  const byIdCall =
    <K extends OperationId>(operationId: K) =>
    (id: string, opts?: RequestOptions): ApiPromise<ResultOf<K>> =>
      t.call(operationId, byId(id), opts);
  /** An operation that takes a JSON body alone (create, …). */
  const bodyCall =
    <K extends OperationId>(operationId: K) =>
    (body: RequestBody<K>, opts?: RequestOptions): ApiPromise<ResultOf<K>> =>
      t.call(operationId, { body }, opts);
  /** An operation on one item by its id, with a JSON body (update, …). */
  const byIdBodyCall =
    <K extends OperationId>(operationId: K) =>
    (id: string, body: RequestBody<K>, opts?: RequestOptions): ApiPromise<ResultOf<K>> =>
      t.call(operationId, { ...byId(id), body }, opts);
  /** A collection's `list` (one page) and `listAll` (every item, page by page) over one list operation. */
  const paged = <T>(listPage: (query: ListParams, opts?: RequestOptions) => ApiPromise<Page<T>>) => ({
    list: (query: ListParams = {}, opts?: RequestOptions) => listPage(query, opts),
    listAll: (params?: ListAllParams, opts?: RequestOptions) => paginate<T>((query) => listPage(query, opts), params),
  });

  const reports = paged((query, opts) => t.call('listReports', { query }, opts));
  const insights = paged((query, opts) => t.call('listInsights', { query }, opts));
  const dashboards = paged((query, opts) => t.call('listDashboards', { query }, opts));

  return {
    /** Any operation of the OpenAPI document by its operationId, typed by the generated client. */
    request<K extends OperationId>(operationId: K, input?: CallInput<K>, opts?: RequestOptions): ApiPromise<ResultOf<K>> {
      return t.call(operationId, input, opts);
    },

    account: {
      /** The key's account and plan. */
      get: (opts?: RequestOptions): ApiPromise<Account> => t.call('getAccount', {}, opts),
      /** Requests counted in the current window against the plan's limit. */
      usage: (opts?: RequestOptions): ApiPromise<Usage> => t.call('getUsage', {}, opts),
    },

    sources: {
      ...paged((query, opts) => t.call('listSources', { query }, opts)),
      create: bodyCall('createSource'),
      get: byIdCall('getSource'),
      /** The rows the source's last quarantining sync set aside (schema policy `quarantine`), as CSV text. */
      quarantine: byIdCall('getSourceQuarantine'),
      /**
       * Sets the source's sync schedule (url and database sources), or removes it with `{ schedule: null }`; its
       * schema policy; or its incremental settings (database sources; the next sync is then full).
       */
      update: byIdBodyCall('updateSource'),
      delete: byIdCall('deleteSource'),
      /**
       * Syncs again: answers 202 with the source back in `pending`. An incremental source pulls only new and
       * changed rows; `{ mode: 'full' }` pulls everything and restarts its cursor (409 while a sync runs).
       */
      sync: (id: string, body: SyncSourceInput = {}, opts?: RequestOptions): ApiPromise<Source> => t.call('syncSource', { ...byId(id), body }, opts),
      /**
       * Creates a file source from a file, streamed as the request body (up to the API's upload limit, 2 GiB
       * by default): a Buffer, string, Blob/File, or a stream such as `fs.createReadStream(path)`. Answers 201
       * with the source `pending`; poll `get` until it is ready. A stream is sent once, never retried.
       */
      upload: (file: UploadFile, input: UploadOptions & { name: string }, opts?: RequestOptions): ApiPromise<Source> => {
        const format = formatOfUpload(file, input.format);
        return t.call('uploadSource', { query: { name: input.name, format }, upload: { file, contentType: CONTENT_TYPE_OF[format] } }, opts);
      },
      /** Replaces a file source's data with a file in its own format (streamed like `upload`); 202, back in `pending`. */
      replaceData: (id: string, file: UploadFile, input: UploadOptions = {}, opts?: RequestOptions): ApiPromise<Source> => {
        const format = formatOfUpload(file, input.format);
        return t.call('replaceSourceData', { ...byId(id), query: { format }, upload: { file, contentType: CONTENT_TYPE_OF[format] } }, opts);
      },
    },

    analytics: {
      overview: (opts?: RequestOptions): ApiPromise<Overview> => t.call('getOverview', {}, opts),
      /** Calls per API key (the dashboard apart) or per operation over 1 h, 24 h or 30 d: requests, 4xx, 5xx, 429s, error rate, series. */
      usage: (query: UsageStatsParams = {}, opts?: RequestOptions): ApiPromise<UsageStats> => t.call('getUsageStats', { query }, opts),
      listReports: reports.list,
      listAllReports: reports.listAll,
      getReport: byIdCall('getReport'),
      /** Every row of a completed report's result as CSV text (not only the page in `getReport`'s rows). */
      exportReportCsv: byIdCall('exportReportCsv'),
      /** Every row of a completed report's result as the bytes of a Parquet file. */
      exportReportParquet: (id: string, opts?: RequestOptions): ApiPromise<Uint8Array> => t.call('exportReportParquet', byId(id), opts) as unknown as ApiPromise<Uint8Array>,
      /** Runs a query; 201 with a completed (or failed) report, or 202 with a running one (see `.withResponse().status`). */
      query: (body: Omit<AnalyticsQueryInput, 'dryRun' | 'saveReport'>, opts?: RequestOptions): ApiPromise<Report> =>
        t.call('runQuery', { body: { ...body, dryRun: false, saveReport: true } }, opts) as ApiPromise<Report>,
      /** Runs a query and answers its result (200) without saving a report: nothing to fetch or export later. */
      queryUnsaved: (body: Omit<AnalyticsQueryInput, 'dryRun' | 'saveReport' | 'async'>, opts?: RequestOptions): ApiPromise<QueryResult> =>
        t.call('runQuery', { body: { ...body, dryRun: false, saveReport: false } }, opts) as ApiPromise<QueryResult>,
      /** Validates a query and estimates what it would read (a dry run): nothing runs and no report is saved. */
      estimate: (body: Omit<AnalyticsQueryInput, 'dryRun'>, opts?: RequestOptions): ApiPromise<QueryEstimate> =>
        t.call('runQuery', { body: { ...body, dryRun: true } }, opts) as ApiPromise<QueryEstimate>,
      listInsights: insights.list,
      listAllInsights: insights.listAll,
      /** Saves a query as a named insight (checked against its source when it runs). */
      createInsight: bodyCall('createInsight'),
      getInsight: byIdCall('getInsight'),
      /** Renames an insight, or replaces its query or chart. */
      updateInsight: byIdBodyCall('updateInsight'),
      /** Deletes an insight and its tiles on every dashboard. */
      deleteInsight: byIdCall('deleteInsight'),
      /** Runs an insight's query on the current data; no report is saved. */
      runInsight: byIdCall('runInsight'),
      listDashboards: dashboards.list,
      listAllDashboards: dashboards.listAll,
      createDashboard: (name: string, opts?: RequestOptions): ApiPromise<Dashboard> => t.call('createDashboard', { body: { name } }, opts),
      /** A dashboard with its tiles and their insights; run each tile's insight for its result. */
      getDashboard: byIdCall('getDashboard'),
      renameDashboard: (id: string, name: string, opts?: RequestOptions): ApiPromise<Dashboard> => t.call('updateDashboard', { ...byId(id), body: { name } }, opts),
      deleteDashboard: byIdCall('deleteDashboard'),
      /** Pins an insight to a dashboard: at `x`, `y`, or below the other tiles; tiles in the way move down. */
      addTile: byIdBodyCall('addDashboardTile'),
      /** Moves or resizes a tile; tiles in the way move down. */
      moveTile: (id: string, tileId: string, body: MoveDashboardTileInput, opts?: RequestOptions): ApiPromise<Dashboard> =>
        t.call('moveDashboardTile', { params: { id, tileId }, body }, opts),
      removeTile: (id: string, tileId: string, opts?: RequestOptions): ApiPromise<Dashboard> => t.call('removeDashboardTile', { params: { id, tileId } }, opts),
    },

    models: {
      ...paged((query, opts) => t.call('listModels', { query }, opts)),
      /**
       * Trains a model on a data source (202 with the model in `training`: poll `get` until ready or
       * failed), or uploads an ONNX model (201, ready at once); see `.withResponse().status`.
       */
      create: bodyCall('createModel'),
      get: byIdCall('getModel'),
      /** Deletes a trained or uploaded model; built-in models answer 409. */
      delete: byIdCall('deleteModel'),
      /** Runs the version `production` points at, unless the body names a `version` or an `alias`. */
      predict: byIdBodyCall('predict'),
      /** Metrics of one version: `production`'s unless `{version}` or `{alias}` picks another. */
      metrics: (id: string, query: ModelMetricsParams = {}, opts?: RequestOptions): ApiPromise<ModelMetrics> => t.call('getModelMetrics', { ...byId(id), query }, opts),
      /** Every version, newest first, with its status, evaluation and the aliases pointing at it. */
      listVersions: byIdCall('listModelVersions'),
      /** Trains version n+1 on the source's current data (202, training); aliases stay where they are. */
      retrain: (id: string, body: RetrainModelInput = {}, opts?: RequestOptions): ApiPromise<Model> => t.call('retrainModel', { ...byId(id), body }, opts),
      /** Moves aliases (a version) or removes them (null) in one atomic write, e.g. `{production: 2, candidate: null}`. */
      setAliases: (id: string, aliases: UpdateModelAliasesInput['aliases'], opts?: RequestOptions): ApiPromise<ModelAliases> =>
        t.call('updateModelAliases', { ...byId(id), body: { aliases } }, opts),
    },

    webhooks: {
      ...paged((query, opts) => t.call('listWebhooks', { query }, opts)),
      /** Registers an endpoint; the answer carries its signing secret, shown this once. */
      create: bodyCall('createWebhook'),
      get: byIdCall('getWebhook'),
      /** Changes the URL (checked as at registration), events, description or rate limit named (`rateLimitPerSecond: null` lifts the limit). */
      update: byIdBodyCall('updateWebhook'),
      delete: byIdCall('deleteWebhook'),
      listDeliveries: (id: string, query: ListParams & DeliveryFilters = {}, opts?: RequestOptions): ApiPromise<Page<Delivery>> =>
        t.call('listDeliveries', { ...byId(id), query }, opts),
      /** Every delivery (or those the filters name), page by page. */
      listAllDeliveries: (id: string, params: ListAllParams & DeliveryFilters = {}, opts?: RequestOptions) => {
        const { pageSize, max, ...filters } = params;
        return paginate<Delivery>((query) => t.call('listDeliveries', { ...byId(id), query: { ...filters, ...query } }, opts), { pageSize, max });
      },
      /** One message with its payload and, per attempt, the headers sent and the answer (headers and body capped). */
      getDelivery: (id: string, messageId: string, opts?: RequestOptions): ApiPromise<DeliveryDetail> => t.call('getDelivery', { params: { id, messageId } }, opts),
      /** Makes a pending message's waiting retry due now (409 `webhook_delivery_not_pending` once it has finished: use redeliver). */
      retryNow: (id: string, messageId: string, opts?: RequestOptions): ApiPromise<Delivery> => t.call('retryDelivery', { params: { id, messageId } }, opts),
      sendTest: byIdCall('sendTestEvent'),
      /** A new signing secret, shown this once; the old one still signs until `previousSecretExpiresAt`. */
      rotateSecret: byIdCall('rotateWebhookSecret'),
      /** Enables a disabled endpoint again; new events go to it from now on. */
      enable: byIdCall('enableWebhook'),
      /** Sends a message (by its event id, the webhook-id header) to the endpoint again. */
      redeliver: (id: string, messageId: string, opts?: RequestOptions): ApiPromise<Delivery> => t.call('redeliverMessage', { params: { id, messageId } }, opts),
      /**
       * Sends again every message since `since` that did not reach the endpoint (failed, cancelled, or skipped
       * while it was disabled), at most 1000 per call; repeat with `nextSince` while `hasMore`.
       */
      replay: byIdBodyCall('replayWebhook'),
    },
  };
}
