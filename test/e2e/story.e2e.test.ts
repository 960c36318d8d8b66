import { Readable } from 'node:stream';
import pg from 'pg';
import { Webhook } from 'standardwebhooks';
import { createDapClient, DapApiError, type DapClient } from '@dap/sdk';
import { stackEnv, startReceiver, waitFor } from '@dap/testing';
import { startSystem, type System } from '../system.ts';

/**
 * The customer's story, through the gateway, with every service running as its own process on the real
 * local stack: key → inline source → ready → query → report → predict → webhook → signed callback →
 * an uploaded CSV file (streamed) → ready → query → its data replaced → query → a PostgreSQL source on a
 * schedule that syncs incrementally → queries in a time zone, against the previous period, dry-run, paged and
 * exported → new and changed rows pulled incrementally → a new column quarantined.
 * Every call goes through the SDK (@dap/sdk), checking each answer against its contract schema.
 */
const stack = stackEnv();
let sys: System;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
let apiKey = '';
let gw = '';
let api: DapClient;

/** The status of the API error a call fails with (the SDK throws on every non-2xx answer). */
const failureStatus = (call: PromiseLike<unknown>) =>
  Promise.resolve(call).then(
    () => 0,
    (err: unknown) => (err instanceof DapApiError ? err.status : -1),
  );

beforeAll(async () => {
  receiver = await startReceiver();
  sys = await startSystem({ name: 'e2e', env: { LOG_LEVEL: 'info' } });
  gw = sys.gw;
  // The operator CLI mints the account and key, as `npm start` does for the development account.
  apiKey = sys.createAccount('E2E Corp', 'starter').apiKey;
  // The account is on the starter plan (100 requests a minute) and the story polls: on a busy machine a
  // poll can meet the limit, and the SDK then waits out the gateway's Retry-After, as a client should.
  api = createDapClient({ baseUrl: gw, apiKey, validateResponses: true, maxRetries: 3 });
}, 120_000);

afterAll(async () => {
  await sys?.stop();
  await receiver?.close();
});

it('runs the whole story through the gateway', async () => {
  // Without a key: 401.
  expect(await failureStatus(createDapClient({ baseUrl: gw }).sources.list())).toBe(401);

  // A webhook first, so the callbacks of what follows reach the receiver.
  const hook = await api.webhooks.create({ url: `${receiver.url}/hooks`, events: ['source.*', 'report.completed'] }).withResponse();
  expect(hook.status).toBe(201);
  expect(hook.data.secret).toMatch(/^whsec_/);
  const secret: string = hook.data.secret;
  expect(await api.webhooks.get(hook.data.id)).not.toHaveProperty('secret');

  // Connect an inline source and wait until it is ready.
  const rows = [
    { country: 'FR', amount: 10.5, units: 1 },
    { country: 'FR', amount: 4.5, units: 3 },
    { country: 'DE', amount: 7, units: 2 },
    { country: 'US', amount: 20, units: 5 },
    { country: 'US', amount: 1, units: 1 },
  ];
  const created = await api.sources.create({ name: 'orders', type: 'inline', rows }).withResponse();
  expect(created.status).toBe(201);
  expect(created.headers.get('location')).toBe(`/v1/sources/${created.data.id}`);
  const sourceId: string = created.data.id;
  const ready = await waitFor(
    async () => {
      const s = await api.sources.get(sourceId);
      return s.status === 'ready' ? s : null;
    },
    { timeoutMs: 30_000, intervalMs: 200, what: 'source ready' },
  );
  expect(ready.rowCount).toBe(5);
  expect(ready.schema).toEqual(
    expect.arrayContaining([
      { name: 'country', type: 'string' },
      { name: 'amount', type: 'number' },
      { name: 'units', type: 'integer' },
    ]),
  );
  const list = await api.sources.list().withResponse();
  expect(list.status).toBe(200);
  expect(list.data.data.map((s) => s.id)).toContain(sourceId);
  expect(list.headers.get('x-ratelimit-limit')).toBe('100');
  const listed: string[] = [];
  for await (const s of api.sources.listAll()) listed.push(s.id);
  expect(listed).toEqual([sourceId]);

  // Query it; the answer is saved as a report (the analytics projection may lag the source by a moment).
  const query = {
    sourceId,
    measures: [
      { op: 'count' as const, as: 'orders' },
      { op: 'sum' as const, field: 'amount', as: 'revenue' },
      { op: 'avg' as const, field: 'units', as: 'avgUnits' },
    ],
    dimensions: ['country'],
    orderBy: [{ field: 'country', direction: 'asc' as const }],
  };
  const report = await waitFor(
    async () => {
      const r = await api.analytics.query(query).withResponse();
      return r.status === 201 ? r : null;
    },
    { timeoutMs: 20_000, intervalMs: 200, what: 'query accepted' },
  );
  expect(report.data.status).toBe('completed');
  expect(report.data.rows).toEqual([
    { country: 'DE', orders: 1, revenue: 7, avgUnits: 2 },
    { country: 'FR', orders: 2, revenue: 15, avgUnits: 2 },
    { country: 'US', orders: 2, revenue: 21, avgUnits: 3 },
  ]);
  expect(report.headers.get('location')).toBe(`/v1/analytics/reports/${report.data.id}`);
  const fetched = await api.analytics.getReport(report.headers.get('location')!.split('/').pop()!).withResponse();
  expect(fetched.status).toBe(200);
  expect(fetched.data.rows).toEqual(report.data.rows);
  // The report says whether its page holds the whole result; the exports carry every row.
  expect(fetched.data).toMatchObject({ rowCount: 3, totalRows: 3, truncated: false });
  expect(await api.analytics.exportReportCsv(report.data.id)).toBe('country,orders,revenue,avgUnits\r\nDE,1,7,2\r\nFR,2,15,2\r\nUS,2,21,3\r\n');
  const parquet = await api.analytics.exportReportParquet(report.data.id);
  expect(Buffer.from(parquet.subarray(0, 4)).toString()).toBe('PAR1');

  // Predict on a built-in model, then read its serving metrics.
  const models = await api.models.list().withResponse();
  expect(models.status).toBe(200);
  const forecast = models.data.data.find((m) => m.name === 'forecast');
  expect(forecast).toBeDefined();
  const series = Array.from({ length: 28 }, (_, i) => 100 + i + 10 * Math.sin((2 * Math.PI * i) / 7));
  const prediction = await api.models.predict(forecast!.id, { inputs: [{ series, horizon: 7, seasonLength: 7 }] }).withResponse();
  expect(prediction.status).toBe(200);
  expect(prediction.data.predictions[0]!.forecast).toHaveLength(7);
  const metrics = await api.models.metrics(forecast!.id).withResponse();
  expect(metrics.status).toBe(200);
  expect(metrics.data.serving.lastHour.count).toBeGreaterThanOrEqual(1);

  // The overview counts what happened (fed by events, so poll briefly).
  await waitFor(
    async () => {
      const o = await api.analytics.overview();
      return o.counts.sources === 1 && o.counts.rows === 5 && o.counts.reports >= 1 && o.counts.webhooks === 1 ? o : null;
    },
    { timeoutMs: 15_000, intervalMs: 250, what: 'overview counts' },
  );

  // The receiver got a signed source.ready callback that an independent verifier accepts.
  const delivery = await waitFor(() => receiver.received.find((r) => JSON.parse(r.body).type === 'source.ready'), { timeoutMs: 20_000, what: 'source.ready webhook' });
  const payload = new Webhook(secret).verify(delivery.body, {
    'webhook-id': delivery.headers['webhook-id'] as string,
    'webhook-timestamp': delivery.headers['webhook-timestamp'] as string,
    'webhook-signature': delivery.headers['webhook-signature'] as string,
  }) as { type: string; data: { id: string; rowCount: number } };
  expect(payload.type).toBe('source.ready');
  expect(payload.data).toMatchObject({ id: sourceId, rowCount: 5 });
  expect(delivery.headers['webhook-id']).toMatch(/^evt_/);
  expect(() =>
    new Webhook(secret).verify(delivery.body.replace('"rowCount":5', '"rowCount":6'), {
      'webhook-id': delivery.headers['webhook-id'] as string,
      'webhook-timestamp': delivery.headers['webhook-timestamp'] as string,
      'webhook-signature': delivery.headers['webhook-signature'] as string,
    }),
  ).toThrow();

  // Upload a CSV file through the gateway, streamed (the SDK sends a Node stream as the raw request body), and
  // query it; then replace its data with a new file and query again.
  const countries = ['FR', 'DE', 'US'];
  const fileRows = (n: number, step: number) => Array.from({ length: n }, (_, i) => ({ country: countries[i % 3]!, amount: (i % 10) * step + 0.5 }));
  const toCsv = (rs: { country: string; amount: number }[]) => ['country,amount', ...rs.map((r) => `${r.country},${r.amount}`)].join('\n') + '\n';
  const totals = (rs: { country: string; amount: number }[]) =>
    countries
      .map((country) => ({ country, orders: rs.filter((r) => r.country === country).length, revenue: rs.filter((r) => r.country === country).reduce((a, r) => a + r.amount, 0) }))
      .sort((a, b) => a.country.localeCompare(b.country));
  const byCountry = async (id: string) => {
    const r = await waitFor(
      async () => {
        const q = await api.analytics
          .query({
            sourceId: id,
            measures: [
              { op: 'count', as: 'orders' },
              { op: 'sum', field: 'amount', as: 'revenue' },
            ],
            dimensions: ['country'],
            orderBy: [{ field: 'country', direction: 'asc' }],
          })
          .withResponse();
        return q.status === 201 ? q : null;
      },
      { timeoutMs: 20_000, intervalMs: 200, what: 'query on the uploaded source accepted' },
    );
    return r.data.rows;
  };
  const settledSource = (id: string, rowCount: number) =>
    waitFor(
      async () => {
        const s = await api.sources.get(id);
        if (s.status === 'failed') throw new Error(`the uploaded source failed: ${s.error}`);
        return s.status === 'ready' && s.rowCount === rowCount ? s : null;
      },
      { timeoutMs: 30_000, intervalMs: 200, what: `uploaded source ready with ${rowCount} rows` },
    );
  const first = fileRows(3000, 1);
  const text = toCsv(first);
  const pieces = Array.from({ length: Math.ceil(text.length / 4096) }, (_, i) => Buffer.from(text.slice(i * 4096, (i + 1) * 4096)));
  const uploaded = await api.sources.upload(Readable.from(pieces), { name: 'orders-file', format: 'csv' }).withResponse();
  expect(uploaded.status).toBe(201);
  expect(uploaded.data).toMatchObject({ name: 'orders-file', type: 'csv', status: 'pending' });
  expect(uploaded.headers.get('location')).toBe(`/v1/sources/${uploaded.data.id}`);
  const fileSource = await settledSource(uploaded.data.id, 3000);
  expect(fileSource.schema).toEqual([
    { name: 'country', type: 'string' },
    { name: 'amount', type: 'number' },
  ]);
  expect(await byCountry(uploaded.data.id)).toEqual(totals(first));
  const second = fileRows(1500, 2);
  const replaced = await api.sources.replaceData(uploaded.data.id, Buffer.from(toCsv(second)), { format: 'csv' }).withResponse();
  expect(replaced.status).toBe(202);
  await settledSource(uploaded.data.id, 1500);
  expect(await byCountry(uploaded.data.id)).toEqual(totals(second));
  expect((await api.sources.delete(uploaded.data.id).withResponse()).status).toBe(204);

  await databaseSteps(secret);

  // Delete the source: 204, then 404, and the webhook hears source.deleted. The client traces the call: its
  // traceparent reaches the receiver with the callback (tracing is not exported here: passed on as it came).
  const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
  const tracing = createDapClient({ baseUrl: gw, apiKey, headers: { traceparent: `00-${traceId}-00f067aa0ba902b7-01` } });
  const deleted = await tracing.sources.delete(sourceId).withResponse();
  expect(deleted.status).toBe(204);
  expect(deleted.headers.get('traceresponse')).toBe(`00-${traceId}-00f067aa0ba902b7-01`);
  expect(await failureStatus(api.sources.get(sourceId))).toBe(404);
  const gone = await waitFor(
    () =>
      receiver.received.find((r) => {
        const body = JSON.parse(r.body);
        return body.type === 'source.deleted' && body.data.id === sourceId;
      }),
    { timeoutMs: 20_000, what: 'source.deleted webhook' },
  );
  expect(gone.headers.traceparent).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));

  // No secret leaked into any response header or callback.
  for (const r of receiver.received) expect(r.body).not.toContain(secret);
}, 240_000);

/** The next instant after `now` at which the wall clock in `zone` reads hh:00 (zones with whole-hour offsets). */
function nextLocalHour(now: Date, hour: number, zone: string): string {
  const fmt = new Intl.DateTimeFormat('en-GB', { timeZone: zone, hour: '2-digit', hourCycle: 'h23' });
  for (let t = Math.floor(now.getTime() / 3_600_000 + 1) * 3_600_000; ; t += 3_600_000) {
    if (Number(fmt.format(new Date(t))) === hour) return new Date(t).toISOString();
  }
}

/**
 * A customer's orders database: a source on a cron schedule in Berlin time that pulls only new and changed rows
 * (cursor updated_at, key id) and quarantines rows that do not fit its columns; queried by Berlin days, against
 * the previous period, as a dry run, and paged and exported.
 */
async function databaseSteps(secret: string): Promise<void> {
  const table = `e2e_orders_${sys.suffix}`;
  const db = new pg.Client(stack.POSTGRES_URL);
  await db.connect();
  try {
    await db.query(`CREATE TABLE ${table} (id bigint PRIMARY KEY, country text, amount numeric(10,2), updated_at timestamptz)`);
    // Berlin: the clocks go forward on 29 March 2026 (01:00 UTC). 22:30 UTC on the 28th is still the 28th there,
    // 23:30 UTC on the 29th is already the 30th; the 26th falls in the period before 28–31 March.
    await db.query(
      `INSERT INTO ${table} VALUES (1, 'FR', 10, '2026-03-28T22:30:00Z'), (2, 'DE', 20, '2026-03-29T08:00:00Z'), (3, 'FR', 5, '2026-03-29T23:30:00Z'), (4, 'US', 7, '2026-03-26T08:00:00Z')`,
    );
    const schedule = { cron: '0 6 * * *', timezone: 'Europe/Berlin' };
    const before = new Date();
    const created = await api.sources.create({
      type: 'postgres',
      name: 'orders-db',
      connection: { url: stack.POSTGRES_URL },
      table,
      schedule,
      schemaPolicy: 'quarantine',
      incremental: { cursorField: 'updated_at', primaryKey: ['id'] },
    });
    // Scheduled: its next run is the next 06:00 in Berlin.
    expect(created).toMatchObject({
      schedule,
      nextSyncAt: nextLocalHour(before, 6, 'Europe/Berlin'),
      incremental: { cursorField: 'updated_at', primaryKey: ['id'], cursor: null },
    });
    const synced = (id: string, check: (s: Awaited<ReturnType<typeof api.sources.get>>) => boolean, what: string) =>
      waitFor(
        async () => {
          const s = await api.sources.get(id);
          if (s.lastSync?.status === 'failed') throw new Error(`the database source failed: ${s.lastSync.error}`);
          return s.status === 'ready' && check(s) ? s : null;
        },
        { timeoutMs: 30_000, intervalMs: 200, what },
      );
    const first = await synced(created.id, (s) => s.lastSync?.mode === 'full', 'the first (full) sync');
    expect(first).toMatchObject({ rowCount: 4, lastSync: { rowsPulled: 4, rowsMerged: 4 }, incremental: { cursor: '2026-03-29 23:30:00+00' } });

    // Revenue by Berlin day for 28–31 March (local dates), beside the 3 days before.
    const byDay = {
      sourceId: created.id,
      measures: [{ op: 'sum' as const, field: 'amount', as: 'revenue' }],
      timeDimension: { field: 'updated_at', granularity: 'day' as const, from: '2026-03-28', to: '2026-03-31', timezone: 'Europe/Berlin' },
      compareTo: 'previousPeriod' as const,
      orderBy: [{ field: 'updated_at', direction: 'asc' as const }],
    };
    const days = await waitFor(
      async () => {
        const r = await api.analytics.query(byDay).withResponse();
        return r.status === 201 ? r.data : null;
      },
      { timeoutMs: 20_000, intervalMs: 200, what: 'the by-day query accepted' },
    );
    // Buckets start at Berlin midnight (UTC+1, then UTC+2 from the 29th's change); the 26th lines up with the 29th.
    expect(days.rows.map((r) => [r.updated_at, r.revenue, r.revenue_previous])).toEqual([
      ['2026-03-27T23:00:00.000Z', 10, null],
      ['2026-03-28T23:00:00.000Z', 20, 7],
      ['2026-03-29T22:00:00.000Z', 5, null],
    ]);
    expect(days.statistics).toMatchObject({ rowsRead: 4 });
    expect(days.statistics!.bytesRead).toBeGreaterThan(0);

    // A dry run says what the query would read and runs nothing.
    const estimate = await api.analytics.estimate(byDay);
    expect(estimate).toMatchObject({ dryRun: true, estimate: { rowsRead: 4 }, limit: { withinLimit: true } });
    expect(estimate.plan.reads.sort()).toEqual(['amount', 'updated_at']);

    // A page of one row says the result goes on; the CSV export has every row.
    const paged = await api.analytics.query({
      sourceId: created.id,
      measures: [{ op: 'count', as: 'orders' }],
      dimensions: ['country'],
      orderBy: [{ field: 'country' }],
      limit: 1,
    });
    expect(paged).toMatchObject({ rows: [{ country: 'DE', orders: 1 }], rowCount: 1, totalRows: 3, truncated: true });
    expect(await api.analytics.exportReportCsv(paged.id)).toBe('country,orders\r\nDE,1\r\nFR,2\r\nUS,1\r\n');

    // A changed row and a new one: the next sync pulls the rows at or past the cursor only and merges them by id.
    await db.query(`UPDATE ${table} SET amount = 12, updated_at = '2026-03-30T09:00:00Z' WHERE id = 1`);
    await db.query(`INSERT INTO ${table} VALUES (5, 'DE', 3, '2026-03-30T10:00:00Z')`);
    expect((await api.sources.sync(created.id).withResponse()).status).toBe(202);
    const incremental = await synced(created.id, (s) => s.lastSync?.mode === 'incremental', 'the incremental sync');
    expect(incremental).toMatchObject({ rowCount: 5, lastSync: { rowsPulled: 3, rowsMerged: 3 }, incremental: { cursor: '2026-03-30 10:00:00+00' } });
    const ready = await waitFor(
      () => receiver.received.map((r) => JSON.parse(r.body)).find((e) => e.type === 'source.ready' && e.data.id === created.id && e.data.sync?.mode === 'incremental'),
      {
        timeoutMs: 20_000,
        what: 'source.ready of the incremental sync',
      },
    );
    expect(ready.data).toMatchObject({ rowCount: 5, sync: { mode: 'incremental', rowsPulled: 3, rowsMerged: 3 } });

    // A new column: the quarantine policy keeps the schema, loads the rows that fit and sets the other aside.
    await db.query(`ALTER TABLE ${table} ADD COLUMN coupon text`);
    await db.query(`INSERT INTO ${table} VALUES (6, 'FR', 9, '2026-03-30T11:00:00Z', 'SPRING')`);
    await api.sources.sync(created.id);
    const quarantined = await synced(created.id, (s) => s.quarantine !== null, 'the quarantining sync');
    expect(quarantined).toMatchObject({ rowCount: 5, quarantine: { rowCount: 1 }, lastSync: { mode: 'incremental', rowsPulled: 2, rowsMerged: 1 } });
    expect(quarantined.schema.map((c) => c.name)).toEqual(['id', 'country', 'amount', 'updated_at']);
    expect(await api.sources.quarantine(created.id)).toMatch(/^id,country,amount,updated_at,coupon\n6,FR,9(\.0)?,2026-03-30 11:00:00,SPRING\n$/);
    const changed = await waitFor(() => receiver.received.map((r) => JSON.parse(r.body)).find((e) => e.type === 'source.schema_changed' && e.data.id === created.id), {
      timeoutMs: 20_000,
      what: 'source.schema_changed webhook',
    });
    expect(changed.data).toMatchObject({ policy: 'quarantine', applied: false, added: [{ name: 'coupon', type: 'string' }], rows: { read: 2, loaded: 1, quarantined: 1 } });

    // A full re-sync pulls everything again (the quarantined row once more) and restarts the cursor.
    expect((await api.sources.sync(created.id, { mode: 'full' })).incremental?.cursor).toBeNull();
    const full = await synced(created.id, (s) => s.lastSync?.mode === 'full', 'the full re-sync');
    expect(full).toMatchObject({ rowCount: 5, lastSync: { rowsPulled: 6, rowsMerged: 5 }, incremental: { cursor: '2026-03-30 11:00:00+00' } });
    for (const r of receiver.received) expect(r.body).not.toContain(secret);
    expect((await api.sources.delete(created.id).withResponse()).status).toBe(204);
  } finally {
    await db.query(`DROP TABLE IF EXISTS ${table}`).catch(() => undefined);
    await db.end();
  }
}
