import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { makeEvent, newId, reportListSchema, reportSchema, overviewSchema, TOPICS, type DomainEvent, type EventOf, type EventType } from '@dap/contracts';
import { createLogger } from '@dap/logger';
import { callerHeaders, columns, http, serviceTestEnv, uniqueSuffix, waitFor } from '@dap/testing';
import { startSourceFeed, type SourceFeed } from '@dap/testing/event-feed';
import { loadAnalyticsConfig } from '../src/config.ts';
import { startAnalytics } from '../src/index.ts';
import { FILTER_CASES, goldenRows, groupRows, measureRow, MEASURE_DSL, truncate, type Cell, type Granularity } from './golden.ts';

const logger = createLogger({ name: 'analytics-test', level: (process.env.TEST_LOG as 'silent') ?? 'silent' });
const suffix = uniqueSuffix();
const prefix = `t${suffix}.`;
const ROWS = goldenRows();

type Service = Awaited<ReturnType<typeof startAnalytics>>;
let svc: Service;
/** Moves the test store's retirement clock forward (replaced files are removed one grace period after the swap). */
let clockSkewMs = 0;
/** Plays the sources service (and the others whose events the overview counts). */
let feed: SourceFeed;
let seen: DomainEvent[];

const accountA = newId('acct');
const accountB = newId('acct');
const accountC = newId('acct');
const sourceA = newId('src');
const ghostSource = newId('src');

function envFor(extra: Record<string, string> = {}) {
  return loadAnalyticsConfig(serviceTestEnv(`analytics_${suffix}`, prefix, { DATASET_DIR: feed.datasetDir, ...extra }));
}

const api = (method: string, path: string, accountId: string, body?: unknown) =>
  http(method, `${svc.url}/v1${path}`, { headers: callerHeaders(accountId), ...(body === undefined ? {} : { body }) });

/** Stores a report of account A's source directly, as an older version of the service (or a dead one) left it. */
async function insertReport(fields: Record<string, unknown>): Promise<string> {
  const id = newId('rpt');
  const base = {
    accountId: accountA,
    sourceId: sourceA,
    query: { sourceId: sourceA },
    error: null,
    columns: [],
    rows: [],
    rowCount: 0,
    durationMs: null,
    createdAt: new Date(),
    completedAt: null,
    deletedAt: null,
  };
  await svc.mongo.db.collection('reports').insertOne({ _id: id as never, ...base, ...fields });
  return id;
}

const query = (accountId: string, q: Record<string, unknown>) => api('POST', '/analytics/query', accountId, { sourceId: sourceA, ...q });

/** The first answer to `ask` once the service knows the source (until its projection arrives, queries answer 404). */
function onceProjected(ask: () => ReturnType<typeof api>, what: string) {
  return waitFor(
    async () => {
      const r = await ask();
      return r.status === 404 ? null : r;
    },
    { what },
  );
}

/** Numbers compare to 1e-6 (DuckDB may sum floats in another order); everything else exactly. */
function expectRowsClose(actual: Record<string, Cell>[], expected: Record<string, Cell>[]): void {
  expect(actual.length).toBe(expected.length);
  expected.forEach((row, i) => {
    const got = actual[i]!;
    expect(Object.keys(got)).toEqual(Object.keys(row));
    for (const [k, v] of Object.entries(row)) {
      if (typeof v === 'number' && !Number.isInteger(v)) {
        expect(typeof got[k]).toBe('number');
        expect(Math.abs((got[k] as number) - v)).toBeLessThan(1e-6 * Math.max(1, Math.abs(v)));
      } else {
        expect([k, got[k]]).toEqual([k, v]);
      }
    }
  });
}

beforeAll(async () => {
  feed = await startSourceFeed(prefix, 'analytics-test', { storeNow: () => Date.now() + clockSkewMs });
  svc = await startAnalytics(envFor(), { logger });
  seen = (await feed.watch(TOPICS.analytics)).events;
  const result = await feed.provide(accountA, sourceA, { name: 'orders', type: 'inline' }, ROWS);
  expect(result.schema).toEqual(columns({ id: 'integer', country: 'string', status: 'string', amount: 'number', qty: 'integer', paid: 'boolean', ts: 'timestamp' }));
  await waitFor(async () => (await query(accountA, { measures: [{ op: 'count' }] })).status === 201, { what: 'the source projection', timeoutMs: 30_000 });
}, 60_000);

afterAll(async () => {
  await svc?.stop();
  await feed?.stop();
});

describe('golden numbers (checked against a plain TypeScript reference)', () => {
  it('computes every measure over the whole dataset', async () => {
    const res = await query(accountA, { measures: MEASURE_DSL });
    expect(res.status).toBe(201);
    expect(res.headers.get('location')).toBe(`/v1/analytics/reports/${res.body.id}`);
    expect(reportSchema.parse(res.body).status).toBe('completed');
    expect(res.body.columns.map((c: { name: string }) => c.name)).toEqual(Object.keys(measureRow(ROWS)));
    expect(res.body.columns.find((c: { name: string }) => c.name === 'min_ts').type).toBe('timestamp');
    expectRowsClose(res.body.rows, [measureRow(ROWS)]);
    expect(res.body.rowCount).toBe(1);
    expect(res.body.durationMs).toBeGreaterThanOrEqual(0);
    expect(res.body.completedAt).not.toBeNull();
  });

  it('groups every measure by a dimension, nulls last', async () => {
    const res = await query(accountA, { measures: MEASURE_DSL, dimensions: ['country'] });
    expect(res.status).toBe(201);
    expectRowsClose(
      res.body.rows,
      groupRows(ROWS, (r) => r.country).map(([country, rows]) => ({ country, ...measureRow(rows) })),
    );
  });

  it.each(['hour', 'day', 'week', 'month', 'year'] as Granularity[])('buckets by %s', async (g) => {
    const res = await query(accountA, {
      measures: [{ op: 'count' }, { op: 'sum', field: 'qty' }, { op: 'avg', field: 'amount' }],
      timeDimension: { field: 'ts', granularity: g },
      limit: 10_000,
    });
    expect(res.status).toBe(201);
    const expected = groupRows(ROWS, (r) => truncate(r.ts, g)).map(([ts, rows]) => ({
      ts,
      count: rows.length,
      sum_qty: rows.reduce((a, r) => a + r.qty, 0),
      avg_amount: measureRow(rows).avg_amount!,
    }));
    expect(expected.length).toBeGreaterThan(1);
    expectRowsClose(res.body.rows, expected);
  });

  it('applies from (inclusive) and to (exclusive) with a dimension inside each bucket', async () => {
    const from = '2024-03-04T00:00:00Z';
    const to = '2024-07-01T00:00:00Z';
    const res = await query(accountA, {
      measures: [{ op: 'count' }, { op: 'max', field: 'qty' }],
      dimensions: ['paid'],
      timeDimension: { field: 'ts', granularity: 'month', from, to },
    });
    expect(res.status).toBe(201);
    const inRange = ROWS.filter((r) => Date.parse(r.ts) >= Date.parse(from) && Date.parse(r.ts) < Date.parse(to));
    const expected = groupRows(inRange, (r) => truncate(r.ts, 'month')).flatMap(([ts, rows]) =>
      groupRows(rows, (r) => r.paid).map(([paid, rs]) => ({ paid, ts, count: rs.length, max_qty: Math.max(...rs.map((r) => r.qty)) })),
    );
    expectRowsClose(res.body.rows, expected);
  });

  it.each(FILTER_CASES.map((c) => [c.name, c] as const))('filter: %s', async (_name, c) => {
    const res = await query(accountA, { measures: [{ op: 'count' }, { op: 'sum', field: 'qty' }], filters: [c.filter] });
    expect(res.status).toBe(201);
    const kept = ROWS.filter(c.keep);
    if (c.name !== 'contains is case-sensitive') expect(kept.length).toBeGreaterThan(0);
    expect(res.body.rows).toEqual([{ count: kept.length, sum_qty: kept.length ? kept.reduce((a, r) => a + r.qty, 0) : null }]);
  });

  it('ANDs the top-level filters', async () => {
    const res = await query(accountA, {
      measures: [{ op: 'count' }],
      filters: [FILTER_CASES[0]!.filter, FILTER_CASES[5]!.filter],
    });
    expect(res.body.rows).toEqual([{ count: ROWS.filter((r) => FILTER_CASES[0]!.keep(r) && FILTER_CASES[5]!.keep(r)).length }]);
  });

  it('orders by a measure alias, then pages with limit and offset', async () => {
    const all = groupRows(ROWS, (r) => r.status)
      .map(([status, rows]) => ({ status, revenue: measureRow(rows).sum_amount as number }))
      .sort((a, b) => b.revenue - a.revenue);
    const res = await query(accountA, {
      measures: [{ op: 'sum', field: 'amount', as: 'revenue' }],
      dimensions: ['status'],
      orderBy: [{ field: 'revenue', direction: 'desc' }],
      limit: 2,
      offset: 1,
    });
    expect(res.status).toBe(201);
    expectRowsClose(res.body.rows, all.slice(1, 3));
    expect(res.body.query).toMatchObject({ limit: 2, offset: 1, async: false });
  });
});

describe('validation, tenancy and states', () => {
  it('filters with numbers a 64-bit integer cannot hold, and selects integers beyond 2^53 by the digits the results give', async () => {
    const account = newId('acct'); // its own, so the overview's counts of account A stay as they are
    const sourceId = newId('src');
    // Written as text: a JavaScript number cannot hold 9007199254740993.
    await feed.store.stage(account, sourceId, 'ndjson', ['{"n":9007199254740993,"x":1.5}\n', '{"n":9007199254740992,"x":2.5}\n', '{"n":7,"x":-1}\n']);
    const result = await feed.store.ingest(account, sourceId, 'ndjson');
    await feed.announceReady(account, sourceId, { name: 'big', type: 'inline' }, result);
    const count = async (filters: unknown[]) => {
      const res = await onceProjected(() => api('POST', '/analytics/query', account, { sourceId, measures: [{ op: 'count' }], filters }), 'the source projection');
      expect([res.status, res.body.status, res.body.error ?? null]).toEqual([201, 'completed', null]);
      return res.body.rows[0].count as number;
    };
    expect(await count([{ field: 'n', op: 'gt', value: 1e300 }])).toBe(0);
    expect(await count([{ field: 'n', op: 'lt', value: 1e19 }])).toBe(3);
    expect(await count([{ field: 'n', op: 'in', value: [7, 1e20] }])).toBe(1);
    expect(await count([{ field: 'x', op: 'lt', value: 1e300 }])).toBe(3);
    expect(await count([{ field: 'n', op: 'eq', value: '9007199254740993' }])).toBe(1);
    expect(await count([{ field: 'n', op: 'in', value: ['9007199254740992', '99999999999999999999'] }])).toBe(1);
    const rows = await api('POST', '/analytics/query', account, {
      sourceId,
      measures: [{ op: 'count' }],
      dimensions: ['n'],
      filters: [{ field: 'n', op: 'gte', value: '9007199254740993' }],
    });
    expect(rows.body.rows).toEqual([{ n: '9007199254740993', count: 1 }]);
    const refused = await api('POST', '/analytics/query', account, { sourceId, measures: [{ op: 'count' }], filters: [{ field: 'n', op: 'eq', value: '12abc' }] });
    expect(refused.status).toBe(400);
    expect(refused.body.errors).toEqual([{ path: 'filters.0.value', message: 'eq on an integer field needs a number or a string of digits, got string' }]);
  });

  it('answers 400 naming the field for an unknown field, a type mismatch or a bad orderBy', async () => {
    const res = await query(accountA, {
      measures: [{ op: 'sum', field: 'country' }],
      dimensions: ['nope"; DROP TABLE x; --'],
      orderBy: [{ field: 'amount' }],
    });
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toMatch(/application\/problem\+json/);
    expect(res.body.code).toBe('validation_failed');
    expect(res.body.errors.map((e: { path: string }) => e.path).sort()).toEqual(['dimensions.0', 'measures.0.field', 'orderBy.0.field']);
    expect(res.body.errors.find((e: { path: string }) => e.path === 'measures.0.field').message).toMatch(/sum cannot be computed on "country", a string field/);
  });

  it('answers 400 for a malformed body, a bogus granularity, a limit above MAX_RESULT_ROWS and a wrong content type', async () => {
    expect((await api('POST', '/analytics/query', accountA, { sourceId: sourceA })).body.errors[0].path).toBe('measures');
    const g = await query(accountA, { measures: [{ op: 'count' }], timeDimension: { field: 'ts', granularity: 'fortnight' } });
    expect([g.status, g.body.errors[0].path]).toEqual([400, 'timeDimension.granularity']);
    const big = await query(accountA, { measures: [{ op: 'count' }], limit: 10_001 });
    expect([big.status, big.body.errors[0].path]).toEqual([400, 'limit']);
    const text = await http('POST', `${svc.url}/v1/analytics/query`, { headers: { ...callerHeaders(accountA), 'content-type': 'text/plain' }, body: 'x' });
    expect(text.status).toBe(400);
    const op = await query(accountA, { measures: [{ op: 'count', $where: 'x' }] });
    expect(op.status).toBe(400);
  });

  it('answers 400 naming the column and its type for a time dimension that is not a timestamp column', async () => {
    // A text column whose values are not all times stays a string at ingestion; it would bucket as one null time.
    const mixed = newId('src');
    const owner = newId('acct'); // its own account, so the overview counts of the others stay as they are
    const result = await feed.ingest(owner, mixed, [
      { when: '2024-01-05T10:00:00Z', n: 1 },
      { when: 'yesterday', n: 2 },
    ]);
    expect(result.schema).toEqual([
      { name: 'when', type: 'string' },
      { name: 'n', type: 'integer' },
    ]);
    await feed.announceReady(owner, mixed, { name: 'mixed', type: 'inline' }, result);
    const res = await onceProjected(
      () => query(owner, { sourceId: mixed, measures: [{ op: 'count' }], timeDimension: { field: 'when', granularity: 'day' } }),
      'the mixed source projection',
    );
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([{ path: 'timeDimension.field', message: expect.stringMatching(/^"when" is a string field; a time dimension needs a timestamp field/) }]);
    const int = await query(owner, { sourceId: mixed, measures: [{ op: 'count' }], timeDimension: { field: 'n', granularity: 'day' } });
    expect([int.status, int.body.errors[0].message]).toEqual([400, '"n" is an integer field; a time dimension needs a timestamp field']);
    // Positive control: the timestamp column of the orders source is a time dimension.
    expect((await query(accountA, { measures: [{ op: 'count' }], timeDimension: { field: 'ts', granularity: 'day' } })).status).toBe(201);
  });

  it("answers 404 for an unknown source and another account's source", async () => {
    expect((await query(accountA, { sourceId: newId('src'), measures: [{ op: 'count' }] })).status).toBe(404);
    const other = await query(accountB, { measures: [{ op: 'count' }] });
    expect(other.status).toBe(404);
    expect(other.body.detail).toBe('source was not found');
  });

  it("answers 404 for another account's report, an unknown one and a malformed id", async () => {
    const mine = await query(accountA, { measures: [{ op: 'count' }] });
    expect((await api('GET', `/analytics/reports/${mine.body.id}`, accountA)).status).toBe(200);
    expect((await api('GET', `/analytics/reports/${mine.body.id}`, accountB)).status).toBe(404);
    expect((await api('GET', `/analytics/reports/${mine.body.id}/export.csv`, accountB)).status).toBe(404);
    expect((await api('GET', `/analytics/reports/${newId('rpt')}`, accountA)).status).toBe(404);
    expect((await api('GET', '/analytics/reports/rpt_not-an-id', accountA)).status).toBe(404);
    expect((await api('GET', '/analytics/reports/x/export.csv', accountA)).status).toBe(404);
  });

  it('answers 409 for a source that is not ready', async () => {
    const pending = newId('src');
    await feed.publish('source.created', accountA, pending, { id: pending, name: 'later', type: 'csv' });
    const res = await waitFor(async () => {
      const r = await query(accountA, { sourceId: pending, measures: [{ op: 'count' }] });
      return r.status === 409 ? r : null;
    });
    expect(res.body.detail).toMatch(/status is pending/);
  });

  it('keeps answering on the last good data after a failed re-sync; a source that never had data answers 409', async () => {
    const acct = newId('acct'); // its own account: the overview counts accountA's sources
    const kept = newId('src');
    const result = await feed.ingest(acct, kept, ROWS.slice(0, 5));
    await feed.publish('source.created', acct, kept, { id: kept, name: 'kept', type: 'url' });
    await feed.announceReady(acct, kept, { name: 'kept', type: 'url' }, result);
    const failed = await feed.publish('source.failed', acct, kept, {
      id: kept,
      name: 'kept',
      error: 'the file answered 500',
      kept: { rowCount: result.rowCount, schema: result.schema },
    });
    const never = newId('src');
    await feed.publish('source.created', acct, never, { id: never, name: 'never', type: 'url' });
    const neverFailed = await feed.publish('source.failed', acct, never, { id: never, name: 'never', error: 'the file answered 500' });
    const projections = svc.mongo.db.collection('source_projections');
    await waitFor(async () => (await projections.countDocuments({ _id: { $in: [kept, never] } as never, lastEventId: { $in: [failed.id, neverFailed.id] } })) === 2, {
      what: 'both failures applied',
    });
    const res = await query(acct, { sourceId: kept, measures: [{ op: 'count' }] });
    expect(res.status).toBe(201);
    expect(res.body.rows).toEqual([{ count: 5 }]);
    // Positive control: the failure was applied, and without data there is nothing to query.
    const none = await query(acct, { sourceId: never, measures: [{ op: 'count' }] });
    expect(none.status).toBe(409);
    expect(none.body.detail).toMatch(/status is failed/);
  });

  it('answers 401 to a direct call without (or with a forged) gateway signature', async () => {
    const bare = await http('POST', `${svc.url}/v1/analytics/query`, { body: { sourceId: sourceA, measures: [{ op: 'count' }] } });
    expect(bare.status).toBe(401);
    expect((await http('GET', `${svc.url}/v1/analytics/overview`)).status).toBe(401);
    const forged = { ...callerHeaders(accountA), 'x-dap-signature': 'AAAA' };
    expect((await http('GET', `${svc.url}/v1/analytics/reports`, { headers: forged })).status).toBe(401);
  });

  it('answers 409 when the account already has MAX_CONCURRENT_QUERIES queries running', async () => {
    // Queries running on other instances are known by their reports; four of them fill the account's slots.
    const raw = svc.mongo.db.collection('reports');
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) ids.push(await insertReport({ status: 'running' }));
    try {
      const res = await query(accountA, { measures: [{ op: 'count' }] });
      expect(res.status).toBe(409);
      expect(res.body.detail).toMatch(/already has 4 queries running/);
      expect((await query(accountB, { sourceId: sourceA, measures: [{ op: 'count' }] })).status).toBe(404);
    } finally {
      await raw.deleteMany({ _id: { $in: ids as never[] } });
    }
    expect((await query(accountA, { measures: [{ op: 'count' }] })).status).toBe(201);
  });
});

describe('reports', () => {
  it('runs an async query: 202 + Location, then completed with rows and a report.completed event', async () => {
    const res = await query(accountA, { measures: [{ op: 'count' }, { op: 'sum', field: 'qty' }], dimensions: ['paid'], async: true });
    expect(res.status).toBe(202);
    expect(res.body.status).toBe('running');
    expect(res.body.rows).toEqual([]);
    const location = res.headers.get('location')!;
    expect(location).toBe(`/v1/analytics/reports/${res.body.id}`);
    const done = await waitFor(async () => {
      const r = await http('GET', `${svc.url}${location}`, { headers: callerHeaders(accountA) });
      return r.body.status === 'completed' ? r.body : null;
    });
    const expected = groupRows(ROWS, (r) => r.paid).map(([paid, rows]) => ({ paid, count: rows.length, sum_qty: rows.reduce((a, r) => a + r.qty, 0) }));
    expect(done.rows).toEqual(expected);
    expect(done.rowCount).toBe(2);
    const event = await waitFor(() => seen.find((e) => e.type === 'report.completed' && e.subject === res.body.id), { what: 'report.completed on Kafka' });
    expect(event).toMatchObject({ accountId: accountA, data: { id: res.body.id, sourceId: sourceA, rowCount: 2 } });
  });

  it('ends a query that fails at run time as failed with a reason and a report.failed event', async () => {
    // The projection claims a column the file lacks, as if the data changed under a stale schema.
    const result = await feed.ingest(accountA, ghostSource, [{ a: 1 }, { a: 2 }]);
    await feed.publish('source.ready', accountA, ghostSource, {
      id: ghostSource,
      name: 'ghost',
      type: 'inline',
      rowCount: result.rowCount,
      schema: [...result.schema, { name: 'ghost', type: 'number' }],
    });
    await waitFor(async () => (await query(accountA, { sourceId: ghostSource, measures: [{ op: 'count' }] })).status === 201, { what: 'ghost source' });

    const sync = await query(accountA, { sourceId: ghostSource, measures: [{ op: 'sum', field: 'ghost' }] });
    expect(sync.status).toBe(201);
    expect(sync.body.status).toBe('failed');
    expect(sync.body.error).toMatch(/^the query could not be executed: .*ghost/);
    expect(sync.body.error).not.toContain(feed.dir);

    const res = await query(accountA, { sourceId: ghostSource, measures: [{ op: 'avg', field: 'ghost' }], async: true });
    expect(res.status).toBe(202);
    const failed = await waitFor(async () => {
      const r = await api('GET', `/analytics/reports/${res.body.id}`, accountA);
      return r.body.status === 'failed' ? r.body : null;
    });
    expect(failed.error).toMatch(/ghost/);
    expect(failed.rows).toEqual([]);
    const event = await waitFor(() => seen.find((e) => e.type === 'report.failed' && e.subject === res.body.id), { what: 'report.failed on Kafka' });
    expect(event).toMatchObject({ data: { id: res.body.id, sourceId: ghostSource, error: failed.error } });

    const csv = await api('GET', `/analytics/reports/${res.body.id}/export.csv`, accountA);
    expect(csv.status).toBe(409);
    expect(csv.body.detail).toMatch(/failed .*nothing to export/);
  });

  it('exports a completed report as CSV', async () => {
    const res = await query(accountA, { measures: [{ op: 'count' }, { op: 'max', field: 'amount', as: 'top' }], dimensions: ['country'] });
    const csv = await http('GET', `${svc.url}/v1/analytics/reports/${res.body.id}/export.csv`, { headers: callerHeaders(accountA) });
    expect(csv.status).toBe(200);
    expect(csv.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(csv.headers.get('content-disposition')).toBe(`attachment; filename="${res.body.id}.csv"`);
    const lines = groupRows(ROWS, (r) => r.country).map(
      ([country, rows]) => `${country ?? ''},${rows.length},${Math.max(...rows.filter((r) => r.amount !== null).map((r) => r.amount!))}`,
    );
    expect(csv.text).toBe(['country,count,top', ...lines].join('\r\n') + '\r\n');
  });

  it('stores rows as one JSON string, and still reads reports stored with row arrays', async () => {
    const res = await query(accountA, { measures: [{ op: 'count' }], dimensions: ['paid'] });
    const stored = await svc.mongo.db.collection('reports').findOne({ _id: res.body.id });
    expect(JSON.parse(stored!.rowsJson)).toEqual(res.body.rows.map((r: { paid: boolean; count: number }) => [r.paid, r.count]));
    expect(stored).not.toHaveProperty('rows');

    const id = await insertReport({
      status: 'completed',
      columns: columns({ k: 'string', n: 'integer' }),
      rows: [
        ['a', 1],
        [null, 2],
      ],
      rowCount: 2,
      durationMs: 1,
      completedAt: new Date(),
    });
    expect((await api('GET', `/analytics/reports/${id}`, accountA)).body.rows).toEqual([
      { k: 'a', n: 1 },
      { k: null, n: 2 },
    ]);
    expect((await api('GET', `/analytics/reports/${id}/export.csv`, accountA)).text).toBe('k,n\r\na,1\r\n,2\r\n');
  });

  it('lists reports newest first without rows, with cursor paging', async () => {
    const first = await api('GET', '/analytics/reports?limit=2', accountA);
    expect(first.status).toBe(200);
    const page = reportListSchema.parse(first.body);
    expect(page.data).toHaveLength(2);
    expect(page.hasMore).toBe(true);
    expect(first.body.data[0]).not.toHaveProperty('rows');
    expect(page.data[0]!.id > page.data[1]!.id).toBe(true);
    const second = await api('GET', `/analytics/reports?limit=2&cursor=${page.nextCursor}`, accountA);
    expect(second.body.data[0].id < page.data[1]!.id).toBe(true);
    expect((await api('GET', '/analytics/reports', accountB)).body).toEqual({ data: [], hasMore: false, nextCursor: null });
    expect((await api('GET', '/analytics/reports?limit=0', accountA)).status).toBe(400);
    expect((await api('GET', '/analytics/reports?cursor=bogus', accountA)).status).toBe(400);
  });

  it('marks a report left running by a dead process as failed, with report.failed', async () => {
    const id = await insertReport({ status: 'running', createdAt: new Date(Date.now() - 3_600_000) });
    expect(await svc.reports.sweepStale()).toBe(1);
    const r = await api('GET', `/analytics/reports/${id}`, accountA);
    expect(r.body).toMatchObject({ status: 'failed', error: 'the query was interrupted by a service restart; run it again' });
    await waitFor(() => seen.find((e) => e.type === 'report.failed' && e.subject === id), { what: 'report.failed for the stale report' });
  });
});

describe('honest results: totals, numbers and full exports', () => {
  const owner = newId('acct'); // its own account, so the overview counts of the others stay as they are
  const noisy = newId('src');
  const big = newId('src');
  const N = 25_000; // past the JSON answer's 10,000-row cap
  const xOf = (i: number) => (i % 2 ? 0.1 : 0.2);

  async function ready(sourceId: string, rows: object[]) {
    const result = await feed.ingest(owner, sourceId, rows);
    await feed.announceReady(owner, sourceId, { name: sourceId, type: 'inline' }, result);
    return result;
  }
  const run = (q: Record<string, unknown>) => api('POST', '/analytics/query', owner, q);

  beforeAll(async () => {
    await ready(noisy, [
      { k: 'a', x: 0.1 },
      { k: 'a', x: 0.2 },
      { k: 'b', x: 1.1 },
      { k: 'b', x: 2.2 },
      { k: 'b', x: 3.3 },
    ]);
    await ready(
      big,
      Array.from({ length: N }, (_, i) => ({ id: i, grp: `g${i % 7}`, x: xOf(i) })),
    );
    await waitFor(async () => (await run({ sourceId: big, measures: [{ op: 'count' }] })).status === 201, { what: 'the big source projection', timeoutMs: 30_000 });
  }, 60_000);

  it('states the total row count and whether the page was cut off', async () => {
    const page = (extra: Record<string, unknown>) => run({ sourceId: big, measures: [{ op: 'count' }], dimensions: ['grp'], ...extra });
    const cut = await page({ limit: 3 });
    expect(cut.status).toBe(201);
    expect(cut.body).toMatchObject({ rowCount: 3, totalRows: 7, truncated: true });
    expect(cut.body.rows.map((r: { grp: string }) => r.grp)).toEqual(['g0', 'g1', 'g2']);
    expect(reportSchema.parse(cut.body)).toMatchObject({ totalRows: 7, truncated: true });
    // The stored report and the list say the same.
    expect((await api('GET', `/analytics/reports/${cut.body.id}`, owner)).body).toMatchObject({ rowCount: 3, totalRows: 7, truncated: true });
    const listed = (await api('GET', '/analytics/reports?limit=1', owner)).body.data[0];
    expect(listed).toMatchObject({ id: cut.body.id, totalRows: 7, truncated: true });
    // Positive controls: pages that hold the end are not cut off, a page past the end still knows the total.
    expect((await page({ limit: 7 })).body).toMatchObject({ rowCount: 7, totalRows: 7, truncated: false });
    expect((await page({ limit: 3, offset: 5 })).body).toMatchObject({ rowCount: 2, totalRows: 7, truncated: false });
    expect((await page({ limit: 3, offset: 3 })).body).toMatchObject({ rowCount: 3, totalRows: 7, truncated: true });
    expect((await page({ limit: 3, offset: 50 })).body).toMatchObject({ rowCount: 0, totalRows: 7, truncated: false });
    expect((await run({ sourceId: big, measures: [{ op: 'count' }], filters: [{ field: 'id', op: 'lt', value: 0 }], dimensions: ['grp'] })).body).toMatchObject({
      rowCount: 0,
      totalRows: 0,
      truncated: false,
    });
    expect((await run({ sourceId: big, measures: [{ op: 'count' }] })).body).toMatchObject({ rows: [{ count: N }], rowCount: 1, totalRows: 1, truncated: false });
  });

  it('rounds computed doubles to 15 significant digits in the JSON, the CSV and the Parquet export', async () => {
    // Positive control: in floating point these sums carry noise.
    expect([0.1 + 0.2, (1.1 + 2.2 + 3.3) / 3]).toEqual([0.30000000000000004, 2.1999999999999997]);
    const res = await run({
      sourceId: noisy,
      measures: [
        { op: 'sum', field: 'x', as: 's' },
        { op: 'avg', field: 'x', as: 'a' },
        { op: 'max', field: 'x' },
      ],
      dimensions: ['k'],
    });
    expect(res.status).toBe(201);
    expect(res.text).not.toMatch(/0000000|9999999/);
    expect(res.body.rows).toEqual([
      { k: 'a', s: 0.3, a: 0.15, max_x: 0.2 },
      { k: 'b', s: 6.6, a: 2.2, max_x: 3.3 },
    ]);
    const csv = await api('GET', `/analytics/reports/${res.body.id}/export.csv`, owner);
    expect(csv.text).toBe('k,s,a,max_x\r\na,0.3,0.15,0.2\r\nb,6.6,2.2,3.3\r\n');
    const file = await download(res.body.id, 'parquet');
    expect((await feed.store.duck.run(`SELECT * FROM read_parquet('${file}')`)).rows).toEqual([
      { k: 'a', s: 0.3, a: 0.15, max_x: 0.2 },
      { k: 'b', s: 6.6, a: 2.2, max_x: 3.3 },
    ]);
  });

  it('keeps sums of a decimal column exact: a number when a double is exactly it, else its digits', async () => {
    // A decimal column as a PostgreSQL numeric or MySQL DECIMAL source would give it.
    const money = newId('src');
    const file = feed.store.newDataFile(owner, money);
    await mkdir(dirname(file), { recursive: true });
    await feed.store.duck.run(
      `COPY (SELECT * FROM (VALUES ('a', 0.10::DECIMAL(18, 2)), ('a', 0.20), ('b', 1234567890123456.78), ('b', 1234567890123456.78)) t(k, amount)) TO '${file}' (FORMAT parquet)`,
    );
    const result = await feed.store.publish(owner, money, file);
    expect(result.schema).toEqual([
      { name: 'k', type: 'string' },
      { name: 'amount', type: 'number' },
    ]);
    await feed.announceReady(owner, money, { name: 'money', type: 'postgres' }, result);
    const res = await onceProjected(() => run({ sourceId: money, measures: [{ op: 'sum', field: 'amount', as: 's' }], dimensions: ['k'] }), 'the decimal source projection');
    expect(res.status).toBe(201);
    // Positive control: as doubles these sums would be 0.30000000000000004 and 2469135780246913.5.
    expect([0.1 + 0.2, Number('1234567890123456.78') * 2]).toEqual([0.30000000000000004, 2469135780246913.5]);
    expect(res.body.rows).toEqual([
      { k: 'a', s: 0.3 },
      { k: 'b', s: '2469135780246913.56' },
    ]);
    expect((await api('GET', `/analytics/reports/${res.body.id}/export.csv`, owner)).text).toBe('k,s\r\na,0.3\r\nb,2469135780246913.56\r\n');
    const parquet = await download(res.body.id, 'parquet');
    expect((await feed.store.duck.run(`SELECT k, s::VARCHAR AS s, typeof(s) AS t FROM read_parquet('${parquet}')`)).rows).toEqual([
      { k: 'a', s: '0.30', t: 'DECIMAL(38,2)' },
      { k: 'b', s: '2469135780246913.56', t: 'DECIMAL(38,2)' },
    ]);
  });

  /** Downloads an export to a file; the path. */
  async function download(id: string, format: 'csv' | 'parquet'): Promise<string> {
    const res = await fetch(`${svc.url}/v1/analytics/reports/${id}/export.${format}`, { headers: callerHeaders(owner) });
    expect(res.status).toBe(200);
    const file = join(feed.dir, `${id}.${format}`);
    await writeFile(file, Buffer.from(await res.arrayBuffer()));
    return file;
  }

  it('exports every row of a result larger than the JSON cap, as CSV and Parquet, in the query order', async () => {
    const res = await run({ sourceId: big, measures: [{ op: 'sum', field: 'x', as: 's' }], dimensions: ['id'], orderBy: [{ field: 'id', direction: 'desc' }], limit: 10 });
    expect(res.body).toMatchObject({ status: 'completed', rowCount: 10, totalRows: N, truncated: true });
    const ids = Array.from({ length: N }, (_, i) => N - 1 - i);

    const csv = await http('GET', `${svc.url}/v1/analytics/reports/${res.body.id}/export.csv`, { headers: callerHeaders(owner) });
    expect(csv.status).toBe(200);
    expect(csv.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(csv.text).toBe(['id,s', ...ids.map((i) => `${i},${xOf(i)}`)].join('\r\n') + '\r\n');

    const parquet = await fetch(`${svc.url}/v1/analytics/reports/${res.body.id}/export.parquet`, { headers: callerHeaders(owner) });
    expect(parquet.status).toBe(200);
    expect(parquet.headers.get('content-type')).toBe('application/vnd.apache.parquet');
    expect(parquet.headers.get('content-disposition')).toBe(`attachment; filename="${res.body.id}.parquet"`);
    const file = join(feed.dir, `${res.body.id}.parquet`);
    await writeFile(file, Buffer.from(await parquet.arrayBuffer()));
    // In the file's own row order.
    const back = await feed.store.duck.run(`SELECT id, s FROM read_parquet('${file}', file_row_number = true) ORDER BY file_row_number`);
    expect(back.rows).toEqual(ids.map((i) => ({ id: i, s: xOf(i) })));

    // Another tenant gets 404, like an unknown report.
    expect((await api('GET', `/analytics/reports/${res.body.id}/export.parquet`, accountA)).status).toBe(404);
  });

  it("exports a report's own data while its replaced file is kept, refuses (409) once it is removed, and exports the new query's", async () => {
    const before = await run({ sourceId: noisy, measures: [{ op: 'count' }], dimensions: ['k'] });
    const original = await api('GET', `/analytics/reports/${before.body.id}/export.csv`, owner);
    expect(original.status).toBe(200);
    await ready(noisy, [{ k: 'c', x: 1 }]);
    // Within the grace period the replaced file is still there: the export is the report's own data, not the new.
    const kept = await api('GET', `/analytics/reports/${before.body.id}/export.csv`, owner);
    expect([kept.status, kept.text]).toEqual([200, original.text]);
    clockSkewMs += feed.store.graceMs + 1;
    expect(await feed.store.sweepRetired()).toBeGreaterThan(0);
    for (const format of ['csv', 'parquet']) {
      const gone = await api('GET', `/analytics/reports/${before.body.id}/export.${format}`, owner);
      expect(gone.status).toBe(409);
      expect(gone.body.detail).toMatch(/replaced by a newer sync of its source; run the query again/);
    }
    const after = await waitFor(
      async () => {
        const r = await run({ sourceId: noisy, measures: [{ op: 'count' }], dimensions: ['k'] });
        return r.body.rows?.[0]?.k === 'c' ? r : null;
      },
      { what: 'the new data' },
    );
    expect((await api('GET', `/analytics/reports/${after.body.id}/export.csv`, owner)).text).toBe('k,count\r\nc,1\r\n');
  });
});

describe('overview', () => {
  it('counts from the events, idempotently, with the latest 20 activities', async () => {
    const [s1, s2, s3] = [newId('src'), newId('src'), newId('src')];
    const [m1, m2, m3] = [newId('mdl'), newId('mdl'), newId('mdl')];
    const [w1, w2] = [newId('whk'), newId('whk')];
    let t = Date.UTC(2025, 0, 1);
    const at = () => new Date((t += 1_000));
    const events: DomainEvent[] = [];
    const add = async <T extends EventType>(type: T, subject: string, data: EventOf<T>['data']) => events.push(await feed.publish(type, accountB, subject, data, at()));

    await add('source.created', s1, { id: s1, name: 'one', type: 'inline' });
    await add('source.ready', s1, { id: s1, name: 'one', type: 'inline', rowCount: 10, schema: [{ name: 'x', type: 'integer' }] });
    await add('source.created', s2, { id: s2, name: 'two', type: 'inline' });
    await add('source.ready', s2, { id: s2, name: 'two', type: 'inline', rowCount: 5, schema: [] });
    await add('source.deleted', s2, { id: s2 });
    await add('source.created', s3, { id: s3, name: 'three', type: 'csv' });
    await add('source.failed', s3, { id: s3, name: 'three', error: 'bad csv' });
    await add('model.ready', m1, { id: m1, name: 'm1', type: 'linear' });
    await add('model.ready', m1, { id: m1, name: 'm1', type: 'linear' }); // retrained: still one model
    await add('model.ready', m2, { id: m2, name: 'm2', type: 'kmeans' });
    await add('model.failed', m3, { id: m3, name: 'm3', error: 'no rows' });
    for (let i = 0; i < 8; i++) await add('prediction.completed', m1, { id: newId('prd'), modelId: m1, count: 5, latencyMs: 2 });
    await add('webhook.created', w1, { id: w1, url: 'https://example.com/a' });
    await add('webhook.created', w2, { id: w2, url: 'https://example.com/b' });
    await add('webhook.deleted', w1, { id: w1 });

    const expected = { sources: 2, rows: 10, reports: 0, models: 4, predictions: 8, webhooks: 1, deliveries: { succeeded: 0, failed: 0 } };
    expect(events.length).toBe(22);
    const last = events.at(-1)!;
    const overview = async () => (await api('GET', '/analytics/overview', accountB)).body;
    const newestFirst = [...events]
      .reverse()
      .slice(0, 20)
      .map((e) => ({ id: e.id, type: e.type, subject: e.subject, occurredAt: e.occurredAt }));
    // Topics are consumed independently: wait until every event is in (the counts alone can match early).
    const body = await waitFor(
      async () => {
        const o = await overview();
        const ids = o.recentActivity.map((a: { id: string }) => a.id).join();
        return JSON.stringify(o.counts) === JSON.stringify(expected) && ids === newestFirst.map((e) => e.id).join() ? o : null;
      },
      { what: 'overview counts' },
    );
    overviewSchema.parse(body);
    expect(body.recentActivity).toEqual(newestFirst);
    expect(body.recentActivity[0].id).toBe(last.id);

    // Redeliver everything (the deleted source's old source.ready included), then a marker on each topic.
    await feed.producer.publish(events);
    const markerSrc = newId('src');
    const markers = [
      await feed.publish('source.failed', accountB, markerSrc, { id: markerSrc, name: 'marker', error: 'x' }, new Date(Date.UTC(2024, 0, 1))),
      await feed.publish('model.failed', accountB, m3, { id: m3, name: 'm3', error: 'again' }, new Date(Date.UTC(2024, 0, 1))),
      await feed.publish('webhook.test', accountB, w2, { endpointId: w2, message: 'hi' }, new Date(Date.UTC(2024, 0, 1))),
    ];
    await waitFor(
      async () => {
        const n = await svc.mongo.db.collection('activity').countDocuments({ _id: { $in: markers.map((m) => m.id) as never[] } });
        return n === markers.length;
      },
      { what: 'the marker events' },
    );
    const again = await overview();
    expect(again.counts).toEqual({ ...expected, sources: 3 }); // the marker source (failed) is the only new source
    expect(again.recentActivity).toEqual(newestFirst); // markers are older; duplicates were not stored twice
    expect(await svc.mongo.db.collection('activity').countDocuments({ accountId: accountB })).toBe(events.length + markers.length);
  });

  it('counts API requests per UTC day from usage.recorded, once per event, 30 days with zeros', async () => {
    const DAY = 86_400_000;
    const now = Date.now();
    const usage = (daysAgo: number, requests: number, rejected: number) =>
      makeEvent('usage.recorded', {
        accountId: accountC,
        subject: accountC,
        data: { windowStart: new Date(now - daysAgo * DAY - 10_000).toISOString(), windowEnd: new Date(now - daysAgo * DAY).toISOString(), requests, rejected },
      });
    const events = [usage(0, 7, 2), usage(0, 3, 0), usage(2, 5, 1), usage(29, 4, 0), usage(30, 100, 50), usage(0, 0, 0), usage(45, 9, 9)];
    const dateOf = (daysAgo: number) => new Date(now - daysAgo * DAY).toISOString().slice(0, 10);
    const expectedByDate = new Map([
      [dateOf(0), { requests: 10, rejected: 2 }],
      [dateOf(2), { requests: 5, rejected: 1 }],
      [dateOf(29), { requests: 4, rejected: 0 }],
    ]);
    const series = async () => (await api('GET', '/analytics/overview', accountC)).body.apiRequestsPerDay as { date: string; requests: number; rejected: number }[];
    const expectedSeries = (days: { date: string }[], extraToday = 0) =>
      days.map(({ date }) => {
        const e = expectedByDate.get(date) ?? { requests: 0, rejected: 0 };
        return { date, requests: e.requests + (date === dateOf(0) ? extraToday : 0), rejected: e.rejected };
      });

    await feed.producer.publish(events);
    const first = await waitFor(
      async () => {
        const s = await series();
        return s.find((d) => d.date === dateOf(0))?.requests === 10 && s[0]?.requests === 4 ? s : null;
      },
      { what: 'usage counts' },
    );
    expect(first).toHaveLength(30);
    expect(first[29]!.date).toBe(dateOf(0));
    expect(first[0]!.date).toBe(dateOf(29));
    expect(first).toEqual(expectedSeries(first));

    // Redelivered events change nothing; a marker after them (same account, same partition) shows they were read.
    const marker = usage(0, 1, 0);
    await feed.producer.publish([events[0]!, events[2]!, events[3]!, marker]);
    const after = await waitFor(
      async () => {
        const s = await series();
        return s.find((d) => d.date === dateOf(0))?.requests === 11 ? s : null;
      },
      { what: 'the usage marker' },
    );
    expect(after).toEqual(expectedSeries(after, 1));
    const stored = await svc.mongo.db.collection('usage_hours').find({ accountId: accountC }).toArray();
    // 30 days ago is kept (the retention is 40 days) but outside the series; the empty window and 45 days ago are not stored.
    expect(stored.flatMap((d) => d.events).sort()).toEqual([...events.slice(0, 5).map((e) => e.id), marker.id].sort());
    // Another account sees none of it.
    expect((await api('GET', '/analytics/overview', accountB)).body.apiRequestsPerDay.every((d: { requests: number }) => d.requests === 0)).toBe(true);
  });

  it('counts webhook deliveries by outcome, once per event, without listing them as activity', async () => {
    const endpoint = newId('whk');
    const delivery = (outcome: 'succeeded' | 'failed') =>
      makeEvent('delivery.completed', {
        accountId: accountC,
        subject: endpoint,
        data: { endpointId: endpoint, eventId: newId('evt'), outcome, attempts: outcome === 'failed' ? 8 : 1 },
      });
    const events = [delivery('succeeded'), delivery('succeeded'), delivery('failed'), delivery('succeeded')];
    await feed.producer.publish(events);
    const overview = async () => (await api('GET', '/analytics/overview', accountC)).body;
    await waitFor(async () => (await overview()).counts.deliveries.succeeded === 3, { what: 'delivery counts' });

    const marker = await feed.publish('webhook.test', accountC, endpoint, { endpointId: endpoint, message: 'marker' });
    await feed.producer.publish([events[0]!, events[2]!]);
    const body = await waitFor(
      async () => {
        const o = await overview();
        return o.recentActivity.some((a: { id: string }) => a.id === marker.id) ? o : null;
      },
      { what: 'the webhook marker' },
    );
    overviewSchema.parse(body);
    expect(body.counts.deliveries).toEqual({ succeeded: 3, failed: 1 });
    expect(body.recentActivity.map((a: { type: string }) => a.type)).toEqual(['webhook.test']);
    expect((await api('GET', '/analytics/overview', accountB)).body.counts.deliveries).toEqual({ succeeded: 0, failed: 0 });
  });

  it("counts the account's own sources, rows and reports", async () => {
    const body = (await api('GET', '/analytics/overview', accountA)).body;
    const reports = await svc.mongo.db.collection('reports').countDocuments({ accountId: accountA });
    expect(body.counts).toMatchObject({ sources: 3, rows: ROWS.length + 2, reports, models: 2, predictions: 0, webhooks: 0, deliveries: { succeeded: 0, failed: 0 } });
    expect(body.apiRequestsPerDay).toHaveLength(30);
    expect(reports).toBeGreaterThan(20);
    const types = new Set(body.recentActivity.map((a: { type: string }) => a.type));
    expect(types.has('report.completed')).toBe(true);
  });
});

describe('a second instance with no time budget', () => {
  it('answers a synchronous query 202 and finishes it in the background', async () => {
    const second = await startAnalytics(envFor({ QUERY_BUDGET_MS: '0' }), { logger });
    try {
      const res = await http('POST', `${second.url}/v1/analytics/query`, { headers: callerHeaders(accountA), body: { sourceId: sourceA, measures: [{ op: 'count' }] } });
      expect(res.status).toBe(202);
      const done = await waitFor(async () => {
        const r = await api('GET', `/analytics/reports/${res.body.id}`, accountA); // the first instance reads it
        return r.body.status === 'completed' ? r.body : null;
      });
      expect(done.rows).toEqual([{ count: ROWS.length }]);
    } finally {
      await second.stop();
    }
  });
});
