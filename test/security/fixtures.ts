import { API_OPERATIONS, createSourceBody, newId, type ApiOperation, type IdPrefix } from '@dap/contracts';
import { waitFor } from '@dap/testing';
import { bearer, type Recorder } from '../system.ts';

/**
 * Resources owned by one account, made through the gateway, so every id-bearing route can be called with a
 * real id: the account's own (deep validation, conformance) or another account's (tenancy).
 */
export interface Caller {
  /** Headers that authenticate: a Bearer key, or a session cookie plus its CSRF token. */
  headers: Record<string, string>;
}

export interface Fixtures {
  source: string;
  report: string;
  model: string;
  webhook: string;
  /** The webhook's signing secret, returned once at creation. */
  webhookSecret: string;
  /** A message (event id) in the webhook's deliveries log. */
  message: string;
  /** True while the route table has no way to make an account's own model: `model` is then a shared built-in. */
  modelShared?: boolean;
  /** A saved insight, a dashboard, and the dashboard's tile showing that insight. */
  insight: string;
  dashboard: string;
  tile: string;
  /** A key of the session account (only for session callers). */
  key?: string;
  keySecret?: string;
}

export const ROWS = Array.from({ length: 40 }, (_, i) => ({ x: i, y: 3 * i + 1 + (i % 3), country: ['FR', 'DE', 'US'][i % 3]!, paid: i % 2 === 0 }));

const op = (id: string) => API_OPERATIONS.find((o) => o.operationId === id);
/** The training operation, when the route table has one (POST /models). */
export const createModelOp = () => API_OPERATIONS.find((o) => o.method === 'post' && o.path === '/models');

export async function makeFixtures(rec: Recorder, gw: string, caller: Caller, receiverUrl: string, opts: { session?: boolean } = {}): Promise<Fixtures> {
  const h = caller.headers;
  const src = await rec.call(gw, 'POST', '/v1/sources', { headers: h, body: { type: 'inline', name: 'fixture', rows: ROWS } });
  if (src.status !== 201) throw new Error(`fixture source: ${src.status} ${src.text}`);
  const source = src.json.id as string;
  await waitFor(async () => (await rec.call(gw, 'GET', `/v1/sources/${source}`, { headers: h })).json?.status === 'ready', { timeoutMs: 30_000, what: 'fixture source ready' });
  // The analytics projection of the source follows its event: retry until the query is accepted.
  const report = await waitFor(
    async () => {
      const r = await rec.call(gw, 'POST', '/v1/analytics/query', { headers: h, body: { sourceId: source, measures: [{ op: 'count', as: 'n' }], dimensions: ['country'] } });
      return r.status === 201 || r.status === 202 ? (r.json.id as string) : null;
    },
    { timeoutMs: 30_000, what: 'fixture report' },
  );
  let model: string;
  let modelShared = false;
  const train = createModelOp();
  if (train) {
    const m = await rec.call(gw, 'POST', '/v1/models', { headers: h, body: { type: 'linear_regression', name: 'fixture', sourceId: source, target: 'y', features: ['x'] } });
    if (m.status !== 202 && m.status !== 201) throw new Error(`fixture model: ${m.status} ${m.text}`);
    model = m.json.id;
  } else {
    const list = await rec.call(gw, 'GET', '/v1/models', { headers: h });
    model = list.json.data[0].id;
    modelShared = true;
  }
  const hook = await rec.call(gw, 'POST', '/v1/webhooks', { headers: h, body: { url: `${receiverUrl}/fixture`, events: ['webhook.test'] } });
  if (hook.status !== 201) throw new Error(`fixture webhook: ${hook.status} ${hook.text}`);
  const test = await rec.call(gw, 'POST', `/v1/webhooks/${hook.json.id}/test`, { headers: h });
  if (test.status !== 202) throw new Error(`fixture test event: ${test.status} ${test.text}`);
  const webhook = hook.json.id as string;
  const message = test.json.eventId as string;
  await waitFor(async () => (await rec.call(gw, 'GET', `/v1/webhooks/${webhook}/deliveries`, { headers: h })).text.includes(message), {
    timeoutMs: 20_000,
    what: 'fixture delivery logged',
  });
  const ins = await rec.call(gw, 'POST', '/v1/analytics/insights', { headers: h, body: { name: 'fixture', query: { sourceId: source, measures: [{ op: 'count' }] } } });
  if (ins.status !== 201) throw new Error(`fixture insight: ${ins.status} ${ins.text}`);
  const dash = await rec.call(gw, 'POST', '/v1/analytics/dashboards', { headers: h, body: { name: 'fixture' } });
  if (dash.status !== 201) throw new Error(`fixture dashboard: ${dash.status} ${dash.text}`);
  const tiled = await rec.call(gw, 'POST', `/v1/analytics/dashboards/${dash.json.id}/tiles`, { headers: h, body: { insightId: ins.json.id } });
  if (tiled.status !== 201) throw new Error(`fixture tile: ${tiled.status} ${tiled.text}`);
  const fixtures: Fixtures = {
    source,
    report,
    model,
    modelShared,
    webhook,
    webhookSecret: hook.json.secret,
    message,
    insight: ins.json.id,
    dashboard: dash.json.id,
    tile: tiled.json.tiles[0].id,
  };
  if (opts.session) {
    const key = await rec.call(gw, 'POST', '/v1/keys', { headers: h, body: { name: 'fixture key', scopes: ['sources:read'] } });
    if (key.status !== 201) throw new Error(`fixture key: ${key.status} ${key.text}`);
    fixtures.key = key.json.id;
    fixtures.keySecret = key.json.secret;
  }
  return fixtures;
}

/** Which fixture a path parameter names, from the resource the path is under. */
export function paramKind(o: Pick<ApiOperation, 'path'>, param: string): keyof Fixtures {
  if (param === 'messageId') return 'message';
  if (param === 'tileId') return 'tile';
  if (param !== 'id') throw new Error(`no fixture for the {${param}} parameter of ${o.path}: add one to test/security/fixtures.ts`);
  const first = o.path.split('/')[1];
  const kinds: Record<string, keyof Fixtures> = { sources: 'source', models: 'model', webhooks: 'webhook', keys: 'key' };
  if (first === 'analytics' && o.path.startsWith('/analytics/reports/')) return 'report';
  if (first === 'analytics' && o.path.startsWith('/analytics/insights/')) return 'insight';
  if (first === 'analytics' && o.path.startsWith('/analytics/dashboards/')) return 'dashboard';
  const kind = first ? kinds[first] : undefined;
  if (!kind) throw new Error(`no fixture for the {id} of ${o.path}: add one to test/security/fixtures.ts`);
  return kind;
}

export const PREFIX_OF: Record<string, IdPrefix> = {
  source: 'src',
  report: 'rpt',
  model: 'mdl',
  webhook: 'whk',
  message: 'evt',
  key: 'key',
  insight: 'ins',
  dashboard: 'dsh',
  tile: 'til',
};

/** The /v1 path of an operation with its parameters taken from `fixtures` (or fresh well-formed ids). */
export function pathOf(o: Pick<ApiOperation, 'path'>, fixtures: Partial<Fixtures> | 'fresh'): string {
  return `/v1${o.path.replace(/\{(\w+)\}/g, (_m, p: string) => {
    const kind = paramKind(o, p);
    const id = fixtures === 'fresh' ? newId(PREFIX_OF[kind]!) : (fixtures[kind] as string | undefined);
    if (!id) throw new Error(`no ${kind} fixture for ${o.path}`);
    return encodeURIComponent(id);
  })}`;
}

/** A body the operation accepts (so a refusal is about who asks, never about what is sent). */
export function validBodyOf(o: ApiOperation, fixtures: Partial<Fixtures>): unknown {
  switch (o.operationId) {
    case 'createSource':
      return { type: 'inline', name: 'x', rows: [{ a: 1 }] };
    case 'uploadSource':
    case 'replaceSourceData':
      return [{ a: 1 }]; // sent as application/json: a JSON file (an array of objects), which these take as it is
    case 'runQuery':
      return { sourceId: fixtures.source, measures: [{ op: 'count' }] };
    case 'createInsight':
      return { name: 'x', query: { sourceId: fixtures.source, measures: [{ op: 'count' }] } };
    case 'updateInsight':
    case 'createDashboard':
    case 'updateDashboard':
      return { name: 'x' };
    case 'addDashboardTile':
      return { insightId: fixtures.insight };
    case 'moveDashboardTile':
      return { x: 1 };
    case 'predict':
      return { inputs: [{ series: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12], horizon: 2, x: 3 }] };
    case 'createWebhook':
      return { url: 'http://127.0.0.1:9/hook' };
    case 'updateModelAliases':
      return { shadowShare: 0 };
    case 'replayWebhook':
      return { since: '2026-01-01T00:00:00Z' };
    case 'updateWebhook':
      return { description: 'x' };
    case 'updateSource':
      return { schemaPolicy: 'freeze' };
    case 'createKey':
      return { name: 'k' };
    case 'rollKey':
      return { gracePeriodSeconds: 0 };
    case 'signup':
      return { email: `u${newId('usr').slice(-8).toLowerCase()}@example.com`, password: 'correct horse battery', accountName: 'x' };
    case 'login':
      return { email: 'nobody@example.com', password: 'correct horse battery' };
  }
  if (o.method === 'post' && o.path === '/models') return { type: 'linear_regression', name: 'm', sourceId: fixtures.source, target: 'y', features: ['x'] };
  return o.body ? {} : undefined;
}

/** Signs up a dashboard user (a new account) and returns its session headers. */
export async function signup(rec: Recorder, gw: string, name: string): Promise<Caller & { token: string; csrf: string; accountId: string }> {
  const res = await rec.call(gw, 'POST', '/v1/auth/signup', {
    body: { email: `${name}-${newId('usr').slice(-10).toLowerCase()}@example.com`, password: 'correct horse battery staple', accountName: name },
  });
  if (res.status !== 201) throw new Error(`signup: ${res.status} ${res.text}`);
  const token = /dap_session=([^;]+)/.exec(res.headers['set-cookie'] ?? '')?.[1];
  if (!token) throw new Error('signup set no session cookie');
  return { headers: { cookie: `dap_session=${token}`, 'x-csrf-token': res.json.csrfToken }, token, csrf: res.json.csrfToken, accountId: res.json.account.id };
}

export const keyCaller = (apiKey: string): Caller => ({ headers: bearer(apiKey) });
export { op as operation, createSourceBody };
