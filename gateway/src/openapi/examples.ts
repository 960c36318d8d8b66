import type { PublicEventType, WebhookPayload } from '@dap/contracts';

/**
 * Realistic examples for the OpenAPI document, by component name: one account connecting an orders file,
 * querying it, training a model on it and receiving webhooks. openapi.test.ts validates every one against
 * its schema, so an example cannot drift from what the API really sends or takes.
 */
const ACCOUNT_ID = 'acct_01JD2V6H8K3M5N7P9Q1R3S5T7V';
const SOURCE_ID = 'src_01JD2W0A4B6C8D0E2F4G6H8J0K';
const REPORT_ID = 'rpt_01JD2X3M5N7P9Q1R3S5T7V9W1X';
const MODEL_ID = 'mdl_01JD2Y8Q0R2S4T6V8W0X2Y4Z6A';
const WEBHOOK_ID = 'whk_01JD2Z1B3C5D7E9F1G3H5J7K9M';
const KEY_ID = 'key_01JD2V9R1S3T5V7W9X1Y3Z5A7B';
const EVENT_ID = 'evt_01JD3A4C6D8E0F2G4H6J8K0M2N';
const T0 = '2026-11-20T09:14:03.512Z';
const T1 = '2026-11-20T09:14:05.027Z';

const account = { id: ACCOUNT_ID, name: 'Analytical Engines Ltd', plan: 'professional', rateLimitPerMinute: 1000, createdAt: '2026-11-02T16:40:11.093Z' };
const session = { user: { id: 'usr_01JD2V6H8K3M5N7P9Q1R3S5T7W', email: 'ada@example.com' }, account, csrfToken: 'Jq3vX9mK2pL7wR4tY8nB5cF1hD6gS0aE' };
const apiKey = {
  id: KEY_ID,
  name: 'reporting job',
  hint: 'dap_sk_…Q7xM',
  scopes: ['analytics:read', 'analytics:write'],
  createdAt: '2026-11-18T08:02:44.170Z',
  lastUsedAt: '2026-11-20T09:13:58.004Z',
  expiresAt: null,
  revokedAt: null,
  replacedBy: null,
};
const columns = [
  { name: 'order_id', type: 'integer' },
  { name: 'ordered_at', type: 'timestamp' },
  { name: 'country', type: 'string' },
  { name: 'status', type: 'string' },
  { name: 'amount', type: 'number' },
];
const source = {
  id: SOURCE_ID,
  name: 'Orders 2026',
  type: 'url',
  config: { url: 'https://data.example.com/exports/orders-2026.csv?[redacted]', format: 'csv', headers: ['Authorization'] },
  status: 'ready',
  error: null,
  schema: columns,
  rowCount: 48213,
  lastSyncedAt: T1,
  lastSync: { status: 'succeeded', error: null, at: T1, mode: 'full', rowsPulled: 48213, rowsMerged: 48213 },
  schedule: { cron: '0 6 * * *', timezone: 'Europe/Berlin' },
  nextSyncAt: '2026-11-21T05:00:00.000Z',
  schemaPolicy: 'evolve',
  quarantine: null,
  incremental: null,
  createdAt: T0,
  updatedAt: T1,
};
const query = {
  sourceId: SOURCE_ID,
  measures: [
    { op: 'count', as: 'orders' },
    { op: 'sum', field: 'amount', as: 'revenue' },
  ],
  dimensions: ['country'],
  filters: [{ field: 'status', op: 'eq', value: 'paid' }],
  orderBy: [{ field: 'revenue', direction: 'desc' }],
  limit: 3,
};
const reportSummary = {
  id: REPORT_ID,
  query: { ...query, timeDimension: null, offset: 0, async: false },
  status: 'completed',
  error: null,
  columns: [
    { name: 'country', type: 'string' },
    { name: 'orders', type: 'integer' },
    { name: 'revenue', type: 'number' },
  ],
  rowCount: 3,
  totalRows: 27,
  truncated: true,
  durationMs: 42.7,
  statistics: { elapsedMs: 42.7, rowsRead: 48213, bytesRead: 731904 },
  createdAt: '2026-11-20T09:20:12.331Z',
  completedAt: '2026-11-20T09:20:12.374Z',
};
const report = {
  ...reportSummary,
  rows: [
    { country: 'DE', orders: 9120, revenue: 418233.5 },
    { country: 'FR', orders: 7044, revenue: 301877.25 },
    { country: 'GB', orders: 6391, revenue: 287410.9 },
  ],
};
const INSIGHT_ID = 'ins_01JD3B2D4E6F8G0H2J4K6M8N0P';
const DASHBOARD_ID = 'dsh_01JD3B5G7H9J1K3M5N7P9Q1R3S';
const queryResult = {
  saved: false,
  query: { ...query, timeDimension: null, offset: 0 },
  columns: report.columns,
  rows: report.rows,
  rowCount: 3,
  totalRows: 27,
  truncated: true,
  durationMs: 38.2,
  statistics: { elapsedMs: 38.2, rowsRead: 48213, bytesRead: 731904 },
  completedAt: '2026-11-20T09:22:40.118Z',
};
const insight = {
  id: INSIGHT_ID,
  name: 'Revenue by country',
  query: { ...query, dimensions: ['country'], filters: [{ field: 'status', op: 'eq', value: 'paid' }], offset: 0 },
  chart: 'bar',
  createdAt: '2026-11-20T09:23:01.450Z',
  updatedAt: '2026-11-20T09:23:01.450Z',
};
const dashboard = {
  id: DASHBOARD_ID,
  name: 'Sales',
  tiles: [{ id: 'til_01JD3B8K0M2N4P6Q8R0S2T4V6W', insightId: INSIGHT_ID, x: 0, y: 0, w: 6, h: 4, insight }],
  createdAt: '2026-11-20T09:24:10.002Z',
  updatedAt: '2026-11-20T09:24:31.870Z',
};
const model = {
  id: MODEL_ID,
  name: 'Order value',
  type: 'linear_regression',
  kind: 'trained',
  status: 'ready',
  version: 1,
  description: 'Predicts the order amount from the country and the hour of the order.',
  features: [
    { name: 'country', type: 'string', description: 'One-hot encoded (20 most frequent values).' },
    { name: 'hour', type: 'integer', description: 'Numeric input.' },
  ],
  createdAt: '2026-11-20T09:30:00.118Z',
  updatedAt: '2026-11-20T09:30:04.902Z',
  error: null,
  training: {
    sourceId: SOURCE_ID,
    target: 'amount',
    features: ['country', 'hour'],
    hyperparameters: { seed: 42, testFraction: 0.2, maxCategories: 20 },
    rows: { available: 48213, used: 48213, train: 38570, test: 9643 },
    startedAt: '2026-11-20T09:30:00.240Z',
    finishedAt: '2026-11-20T09:30:04.880Z',
    durationMs: 4640,
  },
};
const webhook = {
  id: WEBHOOK_ID,
  url: 'https://hooks.example.com/dap',
  events: ['source.*', 'report.completed'],
  description: 'Refresh the sales dashboard',
  status: 'enabled',
  disabledReason: null,
  rateLimitPerSecond: 20,
  filter: { path: '$.data.rowCount', op: 'gt', value: 1000 },
  ordering: 'unordered',
  stats: { filtered: 12 },
  pausedUntil: null,
  health: { attempts24h: 412, succeeded24h: 409, lastFailureAt: '2026-11-20T09:12:03.118Z', failingSince: null },
  createdAt: '2026-11-19T14:05:27.611Z',
  updatedAt: '2026-11-19T14:05:27.611Z',
};
const delivery = {
  id: EVENT_ID,
  type: 'report.completed',
  status: 'succeeded',
  attempts: [
    { at: '2026-11-20T09:20:12.902Z', statusCode: 503, latencyMs: 118.4, error: 'the endpoint answered 503', retryAfterMs: 30_000 },
    { at: '2026-11-20T09:20:43.044Z', statusCode: 200, latencyMs: 84.1, error: null, retryAfterMs: null },
  ],
  nextAttemptAt: null,
  createdAt: '2026-11-20T09:20:12.400Z',
  updatedAt: '2026-11-20T09:20:43.130Z',
};
const page = <T>(data: T[]) => ({ data, hasMore: false, nextCursor: null });
const latency = { count: 1840, errors: 3, errorRate: 0.00163, inputs: 22031, latencyMs: { p50: 0.41, p95: 1.9, p99: 4.2 }, sampled: false };
const WHSEC = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';

/** Request body examples, by the body's component name. */
export const REQUEST_EXAMPLES: Record<string, unknown> = {
  Signup: { email: 'ada@example.com', password: 'correct horse battery', accountName: 'Analytical Engines Ltd' },
  Login: { email: 'ada@example.com', password: 'correct horse battery' },
  ChangePassword: { currentPassword: 'correct horse battery', newPassword: 'staple battery horse correct' },
  PasswordReset: { token: 'q3V0bF9ZtV4m2i7xS8pZl0cJmYk1n4Rw6uHa9dEeTgA', newPassword: 'staple battery horse correct' },
  CreateApiKey: { name: 'reporting job', scopes: ['analytics:read', 'analytics:write'], expiresAt: '2027-06-30T00:00:00Z' },
  RollApiKey: { gracePeriodSeconds: 3600 },
  CreateSource: {
    type: 'url',
    name: 'Orders 2026',
    url: 'https://data.example.com/exports/orders-2026.csv?token=e1b2c3',
    format: 'csv',
    headers: { Authorization: 'Bearer 6f1c2d9e8a7b' },
    schedule: { cron: '0 6 * * *', timezone: 'Europe/Berlin' },
  },
  UpdateSource: { schedule: { every: '1h' } },
  SyncSource: { mode: 'full' },
  AnalyticsQuery: query,
  CreateModel: { type: 'linear_regression', name: 'Order value', sourceId: SOURCE_ID, features: ['country', 'hour'], target: 'amount', hyperparameters: { seed: 42 } },
  PredictRequest: {
    inputs: [
      { country: 'DE', hour: 14 },
      { country: 'FR', hour: 9 },
    ],
  },
  CreateWebhook: { url: 'https://hooks.example.com/dap', events: ['source.*', 'report.completed'], description: 'Refresh the sales dashboard', rateLimitPerSecond: 20 },
  RetrainModel: { hyperparameters: { seed: 7, testFraction: 0.2 } },
  UpdateModelAliases: { aliases: { production: 2, candidate: null } },
  ReplayWebhook: { since: '2026-11-24T00:00:00Z' },
  UpdateWebhook: { rateLimitPerSecond: 20 },
  CreateInsight: { name: 'Revenue by country', query, chart: 'bar' },
  UpdateInsight: { name: 'Paid revenue by country' },
  CreateDashboard: { name: 'Sales' },
  UpdateDashboard: { name: 'Sales (weekly)' },
  AddDashboardTile: { insightId: INSIGHT_ID, w: 6, h: 4 },
  MoveDashboardTile: { x: 6, y: 0 },
};

/** 2xx response body examples, by the body's component name. */
export const RESPONSE_EXAMPLES: Record<string, unknown> = {
  Session: session,
  Account: account,
  Usage: { plan: 'professional', limit: 1000, windowSeconds: 60, used: 37, remaining: 963, resetSeconds: 41 },
  ApiKeyList: page([apiKey]),
  ApiKey: apiKey,
  ApiKeyCreated: { ...apiKey, lastUsedAt: null, secret: 'dap_sk_4fT9kQ2mWx8ZbR1cV7nL3pH6sJ0dYe5Q7xMa1B2c' },
  SourceList: page([source]),
  Source: source,
  AnalyticsOverview: {
    counts: { sources: 3, rows: 61870, reports: 14, models: 5, predictions: 1840, webhooks: 1, deliveries: { succeeded: 52, failed: 1 } },
    apiRequestsPerDay: Array.from({ length: 30 }, (_, i) => {
      const day = new Date(Date.UTC(2026, 9, 22 + i)).toISOString().slice(0, 10);
      return { date: day, requests: i < 12 ? 0 : 180 + ((i * 97) % 240), rejected: i === 25 ? 4 : 0 };
    }),
    recentActivity: [
      { id: 'evt_01JD3A6E8F0G2H4J6K8M0N2P4Q', type: 'model.ready', subject: MODEL_ID, occurredAt: '2026-11-20T09:30:04.902Z' },
      { id: EVENT_ID, type: 'report.completed', subject: REPORT_ID, occurredAt: '2026-11-20T09:20:12.374Z' },
      { id: 'evt_01JD2W2C4D6E8F0G2H4J6K8M0N', type: 'source.ready', subject: SOURCE_ID, occurredAt: T1 },
    ],
    generatedAt: '2026-11-20T09:31:00.000Z',
  },
  UsageStats: (() => {
    const hours = Array.from({ length: 24 }, (_, i) => new Date(Date.UTC(2026, 10, 19, 10 + i)).toISOString());
    const point = (start: string, i: number, scale: number) => {
      const requests = Math.round((40 + ((i * 37) % 60)) * scale);
      return { start, requests, clientErrors: i % 7 === 0 ? 2 : 0, serverErrors: i === 20 ? 1 : 0, rateLimited: i === 15 ? 3 : 0 };
    };
    const sum = (pts: ReturnType<typeof point>[]) => {
      const t = { requests: 0, clientErrors: 0, serverErrors: 0, rateLimited: 0 };
      for (const p of pts) for (const k of Object.keys(t) as (keyof typeof t)[]) t[k] += p[k];
      return { ...t, errorRate: t.requests ? (t.clientErrors + t.serverErrors) / t.requests : 0 };
    };
    const keySeries = hours.map((h, i) => point(h, i, 1));
    const dashSeries = hours.map((h, i) => ({ start: h, requests: i > 20 ? 12 : 0, clientErrors: 0, serverErrors: 0, rateLimited: 0 }));
    const series = keySeries.map((p, i) => ({ ...p, requests: p.requests + dashSeries[i]!.requests }));
    return {
      window: '24h',
      groupBy: 'key',
      from: hours[0],
      to: '2026-11-20T09:31:00.000Z',
      bucketSeconds: 3600,
      totals: sum(series),
      series,
      groups: [
        { group: KEY_ID, caller: 'key', keyId: KEY_ID, keyHint: 'dap_sk_…Q7xM', operationId: null, ...sum(keySeries), series: keySeries },
        { group: 'dashboard', caller: 'dashboard', keyId: null, keyHint: null, operationId: null, ...sum(dashSeries), series: dashSeries },
      ],
    };
  })(),
  ReportList: page([reportSummary]),
  Report: report,
  QueryResult: queryResult,
  UnsavedQueryAnswer: queryResult,
  Insight: insight,
  InsightList: page([insight]),
  Dashboard: dashboard,
  DashboardList: page([{ id: DASHBOARD_ID, name: 'Sales', tileCount: 1, createdAt: dashboard.createdAt, updatedAt: dashboard.updatedAt }]),
  QueryEstimate: {
    dryRun: true,
    estimate: { rowsRead: 48213, bytesRead: 731904, rowGroups: 1, rowGroupsTotal: 1 },
    limit: { plan: 'professional', maxBytesRead: 21474836480, withinLimit: true },
    plan: {
      columns: [
        { name: 'country', role: 'dimension' },
        { name: 'orders', role: 'measure' },
        { name: 'revenue', role: 'measure' },
      ],
      reads: ['country', 'amount', 'status'],
      operators: ['TOP_N', '  PROJECTION', '    WINDOW', '      HASH_GROUP_BY', '        PROJECTION', '          READ_PARQUET'],
    },
  },
  QuarantineCsv: 'order_id,ordered_at,country,status,amount,coupon\n48214,2026-11-21T06:00:02Z,DE,paid,n/a,\n48215,2026-11-21T06:00:09Z,FR,paid,18.5,WINTER\n',
  ReportCsv: 'country,orders,revenue\r\nDE,9120,418233.5\r\nFR,7044,301877.25\r\nGB,6391,287410.9\r\n',
  ModelList: page([{ ...model, parameters: undefined }]),
  Model: { ...model, parameters: { intercept: 31.2, coefficients: { 'country=DE': 4.1, 'country=FR': 1.8, hour: 0.37 } } },
  Prediction: {
    id: 'prd_01JD3B2F4G6H8J0K2M4N6P8Q0R',
    modelId: MODEL_ID,
    modelVersion: 1,
    alias: 'production',
    predictions: [{ prediction: 45.88 }, { prediction: 36.33 }],
    latencyMs: 0.38,
  },
  ModelMetrics: {
    modelId: MODEL_ID,
    modelVersion: 1,
    evaluation: { kind: 'holdout', mae: 12.4, rmse: 17.9, r2: 0.61 },
    serving: { lastHour: { ...latency, count: 96, errors: 0, errorRate: 0, inputs: 1104 }, lastDay: latency },
    shadow: null,
    drift: {
      window: 'P1D',
      inputs: 22031,
      sampled: false,
      features: [
        {
          feature: 'country',
          kind: 'categorical',
          values: 22031,
          psi: 0.034,
          status: 'stable',
          bins: ['DE', 'FR', 'GB', '(other)'],
          expected: [0.19, 0.15, 0.13, 0.53],
          actual: [0.21, 0.14, 0.12, 0.53],
        },
        {
          feature: 'hour',
          kind: 'numeric',
          values: 22031,
          psi: 0.142,
          status: 'moderate',
          bins: [6, 8, 10, 11, 13, 14, 16, 18, 20],
          expected: [0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1],
          actual: [0.04, 0.07, 0.12, 0.13, 0.14, 0.12, 0.12, 0.1, 0.09, 0.07],
        },
      ],
    },
    generatedAt: '2026-11-20T09:45:00.000Z',
  },
  WebhookList: page([webhook]),
  Webhook: webhook,
  WebhookCreated: { ...webhook, secret: WHSEC },
  WebhookSecretRotated: {
    ...webhook,
    updatedAt: '2026-11-20T10:00:00.000Z',
    secret: 'whsec_Pq7Zk2vN9xR4mT6bW1cY8dF3gH5jL0sA',
    previousSecretExpiresAt: '2026-11-21T10:00:00.000Z',
  },
  DeliveryList: page([delivery]),
  Delivery: {
    ...delivery,
    id: 'evt_01JD3C7H9J1K3M5N7P9Q1R3S5T',
    status: 'pending',
    attempts: [],
    nextAttemptAt: '2026-11-20T11:02:00.000Z',
    updatedAt: '2026-11-20T11:02:00.000Z',
  },
  DeliveryDetail: {
    ...delivery,
    webhookId: 'whk_01JD3B2F8H0J2K4M6N8P0Q2R4S',
    payload: { type: 'report.completed', timestamp: '2026-11-20T09:20:12.300Z', data: { id: 'rpt_01JD3C7F5G7H9J1K3M5N7P9Q1R', status: 'completed' } },
    attempts: [
      {
        ...delivery.attempts[0]!,
        requestHeaders: {
          'webhook-id': EVENT_ID,
          'webhook-timestamp': '1795166412',
          'webhook-signature': 'v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=',
          'content-type': 'application/json',
          'user-agent': 'dap-webhooks/1.0',
          'content-length': '118',
        },
        response: {
          headers: [
            { name: 'content-type', value: 'text/plain' },
            { name: 'retry-after', value: '30' },
          ],
          headersTruncated: false,
          body: 'busy, try later',
          bodyTruncated: false,
        },
      },
      {
        ...delivery.attempts[1]!,
        requestHeaders: {
          'webhook-id': EVENT_ID,
          'webhook-timestamp': '1795166443',
          'webhook-signature': 'v1,9rM0kq2Yx8bq4P1wUeNf1mJ2cQ3vTb6yHh1Zl0sW8aE=',
          'content-type': 'application/json',
          'user-agent': 'dap-webhooks/1.0',
          'content-length': '118',
        },
        response: {
          headers: [{ name: 'content-type', value: 'application/json' }],
          headersTruncated: false,
          body: '{"ok":true}',
          bodyTruncated: false,
        },
      },
    ],
  },
  ModelVersionList: {
    data: [
      {
        version: 2,
        status: 'ready',
        error: null,
        aliases: ['candidate'],
        training: {
          ...model.training,
          hyperparameters: { seed: 7, testFraction: 0.2, maxCategories: 20 },
          startedAt: '2026-11-22T08:00:00.100Z',
          finishedAt: '2026-11-22T08:00:05.020Z',
          durationMs: 4920,
        },
        evaluation: { kind: 'holdout', mae: 11.9, rmse: 17.1, r2: 0.64 },
        createdAt: '2026-11-22T08:00:00.000Z',
      },
      {
        version: 1,
        status: 'ready',
        error: null,
        aliases: ['production'],
        training: model.training,
        evaluation: { kind: 'holdout', mae: 12.4, rmse: 17.9, r2: 0.61 },
        createdAt: '2026-11-20T09:30:00.118Z',
      },
    ],
  },
  ModelAliases: { modelId: MODEL_ID, aliases: { production: 2 }, shadowShare: 0 },
  WebhookReplay: { webhookId: WEBHOOK_ID, since: '2026-11-24T00:00:00.000Z', replayed: 12, hasMore: false, nextSince: null },
  WebhookTest: { eventId: 'evt_01JD3D0K2M4N6P8Q0R2S4T6V8W', webhookId: WEBHOOK_ID, type: 'webhook.test' },
};

/** One delivery body per public event type, as a receiver gets it. */
export const WEBHOOK_EXAMPLES: { [T in PublicEventType]: Extract<WebhookPayload, { type: T }> } = {
  'source.created': { type: 'source.created', timestamp: T0, data: { id: SOURCE_ID, name: 'Orders 2026', type: 'url' } },
  'source.ready': {
    type: 'source.ready',
    timestamp: T1,
    data: { id: SOURCE_ID, name: 'Orders 2026', type: 'url', rowCount: 48213, schema: columns, sync: { mode: 'full', rowsPulled: 48213, rowsMerged: 48213 } },
  },
  'source.failed': { type: 'source.failed', timestamp: T1, data: { id: SOURCE_ID, name: 'Orders 2026', error: 'the URL answered 403 Forbidden' } },
  'source.deleted': { type: 'source.deleted', timestamp: '2026-11-25T17:45:09.220Z', data: { id: SOURCE_ID } },
  'source.schema_changed': {
    type: 'source.schema_changed',
    timestamp: T1,
    data: {
      id: SOURCE_ID,
      name: 'Orders 2026',
      policy: 'freeze',
      applied: false,
      added: [{ name: 'coupon', type: 'string' }],
      removed: [],
      retyped: [{ name: 'order_id', from: 'integer', to: 'string' }],
    },
  },
  'report.completed': { type: 'report.completed', timestamp: '2026-11-20T09:20:12.374Z', data: { id: REPORT_ID, sourceId: SOURCE_ID, rowCount: 3, durationMs: 42.7 } },
  'report.failed': { type: 'report.failed', timestamp: '2026-11-20T09:20:12.374Z', data: { id: REPORT_ID, sourceId: SOURCE_ID, error: 'the source has no column "amount"' } },
  'model.ready': { type: 'model.ready', timestamp: '2026-11-20T09:30:04.902Z', data: { id: MODEL_ID, name: 'Order value', type: 'linear_regression' } },
  'model.failed': {
    type: 'model.failed',
    timestamp: '2026-11-20T09:30:04.902Z',
    data: { id: MODEL_ID, name: 'Order value', error: 'the target column "amount" has no numeric values' },
  },
  'prediction.completed': {
    type: 'prediction.completed',
    timestamp: '2026-11-20T09:41:27.015Z',
    data: { id: 'prd_01JD3B2F4G6H8J0K2M4N6P8Q0R', modelId: MODEL_ID, count: 2, latencyMs: 0.38 },
  },
  'webhook.test': { type: 'webhook.test', timestamp: '2026-11-20T09:05:00.000Z', data: { endpointId: WEBHOOK_ID, message: 'This is a test event sent from the API.' } },
  'endpoint.disabled': {
    type: 'endpoint.disabled',
    timestamp: '2026-11-24T03:12:44.000Z',
    data: { endpointId: WEBHOOK_ID, reason: 'the endpoint answered 410 Gone' },
  },
};
