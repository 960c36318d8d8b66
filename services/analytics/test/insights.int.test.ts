import { dashboardSchema, insightSchema, newId, queryResultSchema, reportListSchema } from '@dap/contracts';
import { createLogger } from '@dap/logger';
import { callerHeaders, http, serviceTestEnv, uniqueSuffix, waitFor } from '@dap/testing';
import { startSourceFeed, type SourceFeed } from '@dap/testing/event-feed';
import { loadAnalyticsConfig } from '../src/config.ts';
import { startAnalytics } from '../src/index.ts';

const logger = createLogger({ name: 'insights-test', level: (process.env.TEST_LOG as 'silent') ?? 'silent' });
const suffix = uniqueSuffix();
const prefix = `i${suffix}.`;

let svc: Awaited<ReturnType<typeof startAnalytics>>;
let feed: SourceFeed;

const accountA = newId('acct');
const accountB = newId('acct');
const sourceA = newId('src');

const ROWS = [
  { country: 'DE', amount: 10 },
  { country: 'DE', amount: 5 },
  { country: 'FR', amount: 7 },
];
const byCountry = { sourceId: sourceA, measures: [{ op: 'count' }, { op: 'sum', field: 'amount', as: 'revenue' }], dimensions: ['country'], orderBy: [{ field: 'country' }] };

const api = (method: string, path: string, accountId: string, body?: unknown) =>
  http(method, `${svc.url}/v1${path}`, { headers: callerHeaders(accountId), ...(body === undefined ? {} : { body }) });

const reportCount = async (accountId: string) => reportListSchema.parse((await api('GET', '/analytics/reports?limit=100', accountId)).body).data.length;

beforeAll(async () => {
  feed = await startSourceFeed(prefix, 'insights-test');
  svc = await startAnalytics(loadAnalyticsConfig(serviceTestEnv(`analytics_ins_${suffix}`, prefix, { DATASET_DIR: feed.datasetDir })), { logger });
  await feed.provide(accountA, sourceA, { name: 'orders', type: 'inline' }, ROWS);
  await waitFor(async () => (await api('POST', '/analytics/query', accountA, { ...byCountry, dryRun: true })).status === 200, {
    what: 'the source projection',
    timeoutMs: 30_000,
  });
}, 60_000);

afterAll(async () => {
  await svc?.stop();
  await feed?.stop();
});

const EXPECTED_ROWS = [
  { country: 'DE', count: 2, revenue: 15 },
  { country: 'FR', count: 1, revenue: 7 },
];

describe('a query run without saving a report', () => {
  it('answers the result with 200 and stores no report; the default still saves one (positive control)', async () => {
    const before = await reportCount(accountA);
    const res = await api('POST', '/analytics/query', accountA, { ...byCountry, saveReport: false });
    expect(res.status).toBe(200);
    expect(res.headers.get('location')).toBeNull();
    const body = queryResultSchema.parse(res.body);
    expect([body.saved, body.rows, body.rowCount, body.totalRows, body.truncated]).toEqual([false, EXPECTED_ROWS, 2, 2, false]);
    expect(body.statistics?.rowsRead).toBe(3);
    expect('id' in res.body).toBe(false);
    expect(await reportCount(accountA)).toBe(before);

    const saved = await api('POST', '/analytics/query', accountA, byCountry);
    expect(saved.status).toBe(201);
    expect(saved.body.rows).toEqual(EXPECTED_ROWS);
    expect(await reportCount(accountA)).toBe(before + 1);
  });

  it('refuses saveReport: false with async: true, naming async', async () => {
    const res = await api('POST', '/analytics/query', accountA, { ...byCountry, saveReport: false, async: true });
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([{ path: 'async', message: expect.stringContaining('saveReport: false') }]);
  });

  it('answers a failed run as 422 query_failed, without the data file path', async () => {
    const res = await api('POST', '/analytics/query', accountA, {
      sourceId: sourceA,
      measures: [{ op: 'sum', field: 'country' }],
      saveReport: false,
    });
    // A sum of text is refused before it runs (400), or fails in DuckDB (422): never a stored report.
    expect([400, 422]).toContain(res.status);
    expect(JSON.stringify(res.body)).not.toContain(feed.dir);
  });
});

describe('insights', () => {
  it('are created, listed, fetched, renamed, re-run and deleted', async () => {
    const created = await api('POST', '/analytics/insights', accountA, { name: '  Revenue by country ', query: byCountry, chart: 'bar' });
    expect(created.status).toBe(201);
    const insight = insightSchema.parse(created.body);
    expect(created.headers.get('location')).toBe(`/v1/analytics/insights/${insight.id}`);
    expect([insight.name, insight.chart, insight.query.sourceId, insight.query.limit]).toEqual(['Revenue by country', 'bar', sourceA, 1000]);
    expect('async' in insight.query || 'saveReport' in insight.query).toBe(false);

    const list = await api('GET', '/analytics/insights', accountA);
    expect(list.status).toBe(200);
    expect(list.body.data.map((i: { id: string }) => i.id)).toContain(insight.id);

    const renamed = await api('PATCH', `/analytics/insights/${insight.id}`, accountA, { name: 'Sales by country' });
    expect([renamed.status, renamed.body.name, renamed.body.chart, renamed.body.query]).toEqual([200, 'Sales by country', 'bar', insight.query]);
    expect((await api('GET', `/analytics/insights/${insight.id}`, accountA)).body.name).toBe('Sales by country');

    const before = await reportCount(accountA);
    const run = await api('POST', `/analytics/insights/${insight.id}/run`, accountA);
    expect(run.status).toBe(200);
    expect(queryResultSchema.parse(run.body).rows).toEqual(EXPECTED_ROWS);
    expect(await reportCount(accountA)).toBe(before);

    // A new query replaces the old: the next run answers it.
    const requery = await api('PATCH', `/analytics/insights/${insight.id}`, accountA, { query: { ...byCountry, filters: [{ field: 'country', op: 'eq', value: 'FR' }] } });
    expect(requery.status).toBe(200);
    expect((await api('POST', `/analytics/insights/${insight.id}/run`, accountA)).body.rows).toEqual([EXPECTED_ROWS[1]]);

    expect((await api('DELETE', `/analytics/insights/${insight.id}`, accountA)).status).toBe(204);
    expect((await api('GET', `/analytics/insights/${insight.id}`, accountA)).status).toBe(404);
    expect((await api('DELETE', `/analytics/insights/${insight.id}`, accountA)).status).toBe(404);
  });

  it('refuses bad names, queries and charts with 400 naming the field', async () => {
    const cases: [unknown, string][] = [
      [{ name: '   ', query: byCountry }, 'name'],
      [{ name: 'x'.repeat(101), query: byCountry }, 'name'],
      [{ name: 'ok', query: { ...byCountry, measures: [] } }, 'query.measures'],
      [{ name: 'ok', query: { ...byCountry, saveReport: false } }, 'query.saveReport'],
      [{ name: 'ok', query: byCountry, chart: 'pie' }, 'chart'],
    ];
    for (const [body, path] of cases) {
      const res = await api('POST', '/analytics/insights', accountA, body);
      expect([res.status, res.body.code]).toEqual([400, 'validation_failed']);
      expect(res.body.errors.map((e: { path: string }) => e.path)).toContain(path);
    }
    const { body } = await api('POST', '/analytics/insights', accountA, { name: 'ok', query: byCountry });
    const empty = await api('PATCH', `/analytics/insights/${body.id}`, accountA, {});
    expect([empty.status, empty.body.code]).toEqual([400, 'validation_failed']);
    const long = await api('PATCH', `/analytics/insights/${body.id}`, accountA, { name: 'z'.repeat(101) });
    expect([long.status, long.body.errors.map((e: { path: string }) => e.path)]).toEqual([400, ['name']]);
  });

  it('are invisible to another account (404), which cannot rename, run or delete them', async () => {
    const { body } = await api('POST', '/analytics/insights', accountA, { name: 'Private', query: byCountry });
    const id = body.id as string;
    for (const [method, path, payload] of [
      ['GET', `/analytics/insights/${id}`],
      ['PATCH', `/analytics/insights/${id}`, { name: 'Stolen' }],
      ['POST', `/analytics/insights/${id}/run`],
      ['DELETE', `/analytics/insights/${id}`],
    ] as const) {
      const res = await api(method, path, accountB, payload);
      expect([method, res.status, res.body.code]).toEqual([method, 404, 'insight_not_found']);
      expect(JSON.stringify(res.body)).not.toContain('Private');
    }
    expect((await api('GET', '/analytics/insights', accountB)).body.data).toEqual([]);
    // The owner still has it, unchanged.
    expect((await api('GET', `/analytics/insights/${id}`, accountA)).body.name).toBe('Private');
  });
});

describe('dashboards', () => {
  const newInsight = async (name: string) => (await api('POST', '/analytics/insights', accountA, { name, query: byCountry })).body.id as string;

  it('are created, renamed, given tiles that move and go, and deleted', async () => {
    const [a, b] = [await newInsight('A'), await newInsight('B')];
    const created = await api('POST', '/analytics/dashboards', accountA, { name: 'Sales' });
    expect(created.status).toBe(201);
    const id = dashboardSchema.parse(created.body).id;
    expect(created.body.tiles).toEqual([]);

    const renamed = await api('PATCH', `/analytics/dashboards/${id}`, accountA, { name: 'Sales weekly' });
    expect([renamed.status, renamed.body.name]).toEqual([200, 'Sales weekly']);

    // Without a place, a tile takes the first free place: below, when the row has no room for it.
    const t1 = await api('POST', `/analytics/dashboards/${id}/tiles`, accountA, { insightId: a, w: 6, h: 4 });
    expect([t1.status, t1.headers.get('location')]).toEqual([201, `/v1/analytics/dashboards/${id}`]);
    const t2 = await api('POST', `/analytics/dashboards/${id}/tiles`, accountA, { insightId: b, w: 12, h: 3 });
    const tiles = dashboardSchema.parse(t2.body).tiles;
    expect(tiles.map((t) => [t.insightId, t.x, t.y, t.w, t.h, t.insight.name])).toEqual([
      [a, 0, 0, 6, 4, 'A'],
      [b, 0, 4, 12, 3, 'B'],
    ]);

    // A third, half as wide, goes beside A where the row has room.
    const c = await newInsight('C');
    const t3 = await api('POST', `/analytics/dashboards/${id}/tiles`, accountA, { insightId: c, w: 6, h: 2 });
    expect(t3.body.tiles.map((t: { insightId: string; x: number; y: number }) => [t.insightId, t.x, t.y])).toEqual([
      [a, 0, 0],
      [c, 6, 0],
      [b, 0, 4],
    ]);
    expect((await api('DELETE', `/analytics/dashboards/${id}/tiles/${t3.body.tiles[1].id}`, accountA)).status).toBe(200);

    // Moving B onto A's row pushes A down below it.
    const moved = await api('PATCH', `/analytics/dashboards/${id}/tiles/${tiles[1]!.id}`, accountA, { y: 0 });
    expect(moved.status).toBe(200);
    expect(moved.body.tiles.map((t: { insightId: string; y: number }) => [t.insightId, t.y])).toEqual([
      [b, 0],
      [a, 3],
    ]);
    // Beside each other when both fit in the row.
    const resized = await api('PATCH', `/analytics/dashboards/${id}/tiles/${tiles[1]!.id}`, accountA, { w: 6, x: 6, y: 3 });
    expect(resized.body.tiles.map((t: { insightId: string; x: number; y: number }) => [t.insightId, t.x, t.y])).toEqual([
      [a, 0, 3],
      [b, 6, 3],
    ]);

    const got = await api('GET', `/analytics/dashboards/${id}`, accountA);
    expect(got.body).toEqual(resized.body);
    const list = await api('GET', '/analytics/dashboards', accountA);
    expect(list.body.data.find((d: { id: string }) => d.id === id)).toMatchObject({ name: 'Sales weekly', tileCount: 2 });

    const removed = await api('DELETE', `/analytics/dashboards/${id}/tiles/${tiles[0]!.id}`, accountA);
    expect([removed.status, removed.body.tiles.map((t: { insightId: string }) => t.insightId)]).toEqual([200, [b]]);
    expect((await api('DELETE', `/analytics/dashboards/${id}/tiles/${tiles[0]!.id}`, accountA)).body.code).toBe('dashboard_tile_not_found');

    expect((await api('DELETE', `/analytics/dashboards/${id}`, accountA)).status).toBe(204);
    expect((await api('GET', `/analytics/dashboards/${id}`, accountA)).status).toBe(404);
    // Its insights stay.
    expect((await api('GET', `/analytics/insights/${b}`, accountA)).status).toBe(200);
  });

  it("deleting an insight removes its tiles from every dashboard; the others' stay", async () => {
    const [gone, kept] = [await newInsight('Gone'), await newInsight('Kept')];
    const ids: string[] = [];
    for (const name of ['One', 'Two']) {
      const id = (await api('POST', '/analytics/dashboards', accountA, { name })).body.id as string;
      await api('POST', `/analytics/dashboards/${id}/tiles`, accountA, { insightId: gone });
      await api('POST', `/analytics/dashboards/${id}/tiles`, accountA, { insightId: kept });
      ids.push(id);
    }
    expect((await api('DELETE', `/analytics/insights/${gone}`, accountA)).status).toBe(204);
    for (const id of ids) {
      const d = await api('GET', `/analytics/dashboards/${id}`, accountA);
      expect(d.body.tiles.map((t: { insightId: string }) => t.insightId)).toEqual([kept]);
    }
    const list = await api('GET', '/analytics/dashboards?limit=100', accountA);
    expect(list.body.data.filter((d: { id: string }) => ids.includes(d.id)).map((d: { tileCount: number }) => d.tileCount)).toEqual([1, 1]);
    // A deleted insight cannot be pinned again.
    const pin = await api('POST', `/analytics/dashboards/${ids[0]}/tiles`, accountA, { insightId: gone });
    expect([pin.status, pin.body.code]).toEqual([404, 'insight_not_found']);
  });

  it('refuses names, grid places and tile counts out of bounds with 400 (or 409 when full), naming the field', async () => {
    const insight = await newInsight('Grid');
    const id = (await api('POST', '/analytics/dashboards', accountA, { name: 'Grid' })).body.id as string;
    expect((await api('POST', '/analytics/dashboards', accountA, { name: '' })).body.errors[0].path).toBe('name');
    expect((await api('PATCH', `/analytics/dashboards/${id}`, accountA, { name: 'y'.repeat(101) })).body.errors[0].path).toBe('name');
    const cases: [Record<string, unknown>, string][] = [
      [{ insightId: insight, x: 12, y: 0, w: 1 }, 'x'],
      [{ insightId: insight, x: 8, y: 0, w: 6 }, 'w'],
      [{ insightId: insight, w: 0 }, 'w'],
      [{ insightId: insight, h: 13 }, 'h'],
      [{ insightId: insight, x: 0, y: 201 }, 'y'],
      [{ insightId: insight, x: 0 }, 'y'],
      [{ insightId: 'rpt_nope' }, 'insightId'],
    ];
    for (const [body, path] of cases) {
      const res = await api('POST', `/analytics/dashboards/${id}/tiles`, accountA, body);
      expect([JSON.stringify(body), res.status, res.body.errors?.map((e: { path: string }) => e.path)]).toEqual([JSON.stringify(body), 400, [path]]);
    }
    const first = await api('POST', `/analytics/dashboards/${id}/tiles`, accountA, { insightId: insight, x: 6, y: 0, w: 6 });
    const tileId = first.body.tiles[0].id as string;
    const wide = await api('PATCH', `/analytics/dashboards/${id}/tiles/${tileId}`, accountA, { w: 7 });
    expect([wide.status, wide.body.errors[0].path]).toEqual([400, 'w']);
    // The positive control: a fitting move is taken.
    expect((await api('PATCH', `/analytics/dashboards/${id}/tiles/${tileId}`, accountA, { x: 0, w: 7 })).status).toBe(200);

    for (let i = 1; i < 30; i++) expect((await api('POST', `/analytics/dashboards/${id}/tiles`, accountA, { insightId: insight, w: 12, h: 1 })).status).toBe(201);
    const full = await api('POST', `/analytics/dashboards/${id}/tiles`, accountA, { insightId: insight });
    expect([full.status, full.body.code]).toEqual([409, 'dashboard_full']);
    expect((await api('GET', `/analytics/dashboards/${id}`, accountA)).body.tiles).toHaveLength(30);
  }, 180_000);

  it("are another account's 404, and cannot pin another account's insight", async () => {
    const insight = await newInsight('Mine');
    const id = (await api('POST', '/analytics/dashboards', accountA, { name: 'Mine' })).body.id as string;
    const tile = (await api('POST', `/analytics/dashboards/${id}/tiles`, accountA, { insightId: insight })).body.tiles[0].id as string;
    for (const [method, path, payload] of [
      ['GET', `/analytics/dashboards/${id}`],
      ['PATCH', `/analytics/dashboards/${id}`, { name: 'Stolen' }],
      ['DELETE', `/analytics/dashboards/${id}`],
      ['PATCH', `/analytics/dashboards/${id}/tiles/${tile}`, { x: 1 }],
      ['DELETE', `/analytics/dashboards/${id}/tiles/${tile}`],
    ] as const) {
      const res = await api(method, path, accountB, payload);
      expect([method, path, res.status, res.body.code]).toEqual([method, path, 404, 'dashboard_not_found']);
    }
    const own = (await api('POST', '/analytics/dashboards', accountB, { name: 'Theirs' })).body.id as string;
    const pin = await api('POST', `/analytics/dashboards/${own}/tiles`, accountB, { insightId: insight });
    expect([pin.status, pin.body.code]).toEqual([404, 'insight_not_found']);
    expect((await api('GET', '/analytics/dashboards', accountB)).body.data.map((d: { id: string }) => d.id)).toEqual([own]);
    const mine = await api('GET', `/analytics/dashboards/${id}`, accountA);
    expect([mine.body.name, mine.body.tiles.length]).toEqual(['Mine', 1]);
  });
});
