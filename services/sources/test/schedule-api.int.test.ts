import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { newId } from '@dap/contracts';
import { startHarness, type Harness } from './harness.ts';

/** The schedule over HTTP: set at creation or with PATCH, removed with null, and every bad one a 400 naming the field. */
let h: Harness;
let files: Server;
let filesUrl = '';

beforeAll(async () => {
  files = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/csv' }).end('id,amount\n1,2.5\n'));
  await new Promise<void>((r) => files.listen(0, '127.0.0.1', () => r()));
  filesUrl = `http://127.0.0.1:${(files.address() as AddressInfo).port}`;
  h = await startHarness();
});

afterAll(async () => {
  await h?.stop();
  files.closeAllConnections();
  await new Promise((r) => files.close(r));
});

const urlSource = (schedule?: unknown) => ({ type: 'url', name: 'export', url: `${filesUrl}/export.csv`, ...(schedule !== undefined ? { schedule } : {}) });

it('creates a URL source with an interval schedule: nextSyncAt is one interval on', async () => {
  const before = Date.now();
  const res = await h.api('POST', '/v1/sources', { body: urlSource({ every: '15m' }) });
  expect(res.status).toBe(201);
  expect(res.body.schedule).toEqual({ every: '15m' });
  const next = Date.parse(res.body.nextSyncAt as string);
  expect(next).toBeGreaterThanOrEqual(before + 15 * 60_000);
  expect(next).toBeLessThanOrEqual(Date.now() + 15 * 60_000);
  // The first sync runs at once, as for every source; the schedule stays.
  expect(await h.settled(res.body.id as string)).toMatchObject({ status: 'ready', schedule: { every: '15m' }, nextSyncAt: res.body.nextSyncAt });
});

it('PATCH sets a cron schedule in a time zone, and null removes it', async () => {
  const account = newId('acct');
  const created = await h.api('POST', '/v1/sources', { account, body: urlSource() });
  expect(created.body).toMatchObject({ schedule: null, nextSyncAt: null });
  const id = created.body.id as string;

  const set = await h.api('PATCH', `/v1/sources/${id}`, { account, body: { schedule: { cron: '30 6 * * *', timezone: 'Asia/Kolkata' } } });
  expect(set.status).toBe(200);
  expect(set.body.schedule).toEqual({ cron: '30 6 * * *', timezone: 'Asia/Kolkata' });
  // 06:30 in Kolkata (UTC+05:30, no daylight saving) is 01:00 UTC, within the next day.
  const next = new Date(set.body.nextSyncAt as string);
  expect([next.getUTCHours(), next.getUTCMinutes(), next.getUTCSeconds()]).toEqual([1, 0, 0]);
  expect(next.getTime() - Date.now()).toBeGreaterThan(0);
  expect(next.getTime() - Date.now()).toBeLessThanOrEqual(24 * 3_600_000);
  expect((await h.api('GET', `/v1/sources/${id}`, { account })).body).toMatchObject({ schedule: set.body.schedule, nextSyncAt: set.body.nextSyncAt });

  const removed = await h.api('PATCH', `/v1/sources/${id}`, { account, body: { schedule: null } });
  expect(removed.status).toBe(200);
  expect(removed.body).toMatchObject({ id, schedule: null, nextSyncAt: null });

  // Another account's id is unknown, exactly like a made-up one.
  expect((await h.api('PATCH', `/v1/sources/${id}`, { body: { schedule: { every: '1h' } } })).status).toBe(404);
  expect((await h.api('PATCH', `/v1/sources/src_nope`, { account, body: { schedule: { every: '1h' } } })).status).toBe(404);
});

it('refuses a bad schedule with a 400 problem naming the field', async () => {
  const account = newId('acct');
  const inline = await h.api('POST', '/v1/sources', { account, body: { type: 'inline', name: 'rows', rows: [{ a: 1 }] } });
  const url = await h.api('POST', '/v1/sources', { account, body: urlSource() });
  const cases: [string, string, unknown, string][] = [
    ['POST', '/v1/sources', urlSource({ every: '30s' }), 'schedule.every'],
    ['POST', '/v1/sources', urlSource({ every: '15 minutes' }), 'schedule.every'],
    ['POST', '/v1/sources', urlSource({ cron: '61 * * * *' }), 'schedule.cron'],
    ['POST', '/v1/sources', urlSource({ cron: '* * * * * *' }), 'schedule.cron'],
    ['POST', '/v1/sources', urlSource({ cron: '0 0 31 2 *' }), 'schedule.cron'],
    ['POST', '/v1/sources', urlSource({ cron: '0 * * * *', timezone: 'Mars/Olympus' }), 'schedule.timezone'],
    ['POST', '/v1/sources', urlSource({ every: '1h', cron: '0 * * * *' }), 'schedule.cron'],
    ['POST', '/v1/sources', { type: 'csv', name: 'c', csv: 'a\n1\n', schedule: { every: '1h' } }, 'schedule'],
    ['PATCH', `/v1/sources/${url.body.id}`, { schedule: { every: '0m' } }, 'schedule.every'],
    ['PATCH', `/v1/sources/${url.body.id}`, { schedule: { cron: 'every day' } }, 'schedule.cron'],
    ['PATCH', `/v1/sources/${url.body.id}`, {}, 'schedule'],
    ['PATCH', `/v1/sources/${inline.body.id}`, { schedule: { every: '1h' } }, 'schedule'],
  ];
  for (const [method, path, body, field] of cases) {
    const res = await h.api(method, path, { account, body });
    expect({ body, status: res.status, type: res.headers.get('content-type'), code: res.body.code }).toEqual({
      body,
      status: 400,
      type: expect.stringContaining('application/problem+json'),
      code: 'validation_failed',
    });
    expect({ body, paths: (res.body.errors as { path: string }[]).map((e) => e.path) }).toEqual({ body, paths: [field] });
  }
  // Nothing was stored: the account still has its two sources, without a schedule.
  const list = await h.api('GET', '/v1/sources', { account });
  expect(list.body.data.map((s: { schedule: unknown }) => s.schedule)).toEqual([null, null]);
});
