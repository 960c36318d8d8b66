import { newId, queryEstimateSchema, reportSchema, type Plan } from '@dap/contracts';
import { createLogger } from '@dap/logger';
import { callerHeaders, columns, http, serviceTestEnv, uniqueSuffix, waitFor } from '@dap/testing';
import { startSourceFeed, type SourceFeed } from '@dap/testing/event-feed';
import { loadAnalyticsConfig } from '../src/config.ts';
import { startAnalytics } from '../src/index.ts';

/*
 * Time zones, week starts, comparisons, dry runs, statistics and the per-plan cap, end to end on the local
 * stack. The expected buckets come from Intl.DateTimeFormat by brute force, independently of the service's
 * SQL and of its own time-zone code.
 */

const logger = createLogger({ name: 'analytics-test', level: (process.env.TEST_LOG as 'silent') ?? 'silent' });
const suffix = uniqueSuffix();
const prefix = `t${suffix}.`;

type Service = Awaited<ReturnType<typeof startAnalytics>>;
let svc: Service;
let capped: Service;
let feed: SourceFeed;

const account = newId('acct');
const source = newId('src');

interface Row {
  id: number;
  v: number;
  ts: string;
}

/** Every 53 minutes over spring 2023, spring 2024 and autumn 2024: every daylight-saving change of both zones in 2024. */
function rows(): Row[] {
  const out: Row[] = [];
  const spans: [string, string][] = [
    ['2023-02-20T00:00:00Z', '2023-04-15T00:00:00Z'],
    ['2024-02-20T00:00:00Z', '2024-04-15T00:00:00Z'],
    ['2024-10-15T00:00:00Z', '2024-11-15T00:00:00Z'],
  ];
  let id = 0;
  for (const [a, b] of spans) {
    for (let t = Date.parse(a); t < Date.parse(b); t += 53 * 60_000) {
      id++;
      out.push({ id, v: (id * 7) % 13, ts: new Date(t).toISOString().replace('.000Z', 'Z') });
    }
  }
  return out;
}
const ROWS = rows();

const formats = new Map<string, Intl.DateTimeFormat>();

/** The wall clock in `tz` at an instant, from Intl. */
function local(ms: number, tz: string) {
  if (!formats.has(tz)) {
    formats.set(
      tz,
      new Intl.DateTimeFormat('en-US', {
        timeZone: tz,
        hourCycle: 'h23',
        year: 'numeric',
        month: 'numeric',
        day: 'numeric',
        hour: 'numeric',
        minute: 'numeric',
        second: 'numeric',
        weekday: 'short',
      }),
    );
  }
  const parts = Object.fromEntries(
    formats
      .get(tz)!
      .formatToParts(new Date(ms))
      .map((p) => [p.type, p.value]),
  );
  const weekday = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'].indexOf(parts.weekday!);
  return { y: +parts.year!, mo: +parts.month!, d: +parts.day!, h: +parts.hour!, mi: +parts.minute!, s: +parts.second!, weekday };
}

const midnights = new Map<string, number>();

/** The first instant whose wall clock in `tz` is y-mo-d 00:00 (brute force over every quarter-hour offset). */
function midnight(y: number, mo: number, d: number, tz: string): number {
  const key = `${tz} ${y}-${mo}-${d}`;
  if (!midnights.has(key)) midnights.set(key, searchMidnight(y, mo, d, tz));
  return midnights.get(key)!;
}

function searchMidnight(y: number, mo: number, d: number, tz: string): number {
  const wall = Date.UTC(y, mo - 1, d);
  const n = new Date(wall);
  const hits: number[] = [];
  for (let offset = -14 * 60; offset <= 14 * 60; offset += 15) {
    const at = wall - offset * 60_000;
    const l = local(at, tz);
    if (l.y === n.getUTCFullYear() && l.mo === n.getUTCMonth() + 1 && l.d === n.getUTCDate() && l.h === 0 && l.mi === 0) hits.push(at);
  }
  if (!hits.length) throw new Error(`no local midnight on ${y}-${mo}-${d} in ${tz}`);
  return Math.min(...hits);
}

type Granularity = 'hour' | 'day' | 'week' | 'month';

/** The instant the bucket holding `ms` starts at, in `tz`. */
function bucketOf(ms: number, g: Granularity, tz: string, weekStartsOn: number): number {
  const l = local(ms, tz);
  switch (g) {
    case 'hour':
      return ms - (l.mi * 60 + l.s) * 1000 - (ms % 1000);
    case 'day':
      return midnight(l.y, l.mo, l.d, tz);
    case 'week': {
      const back = (l.weekday - weekStartsOn + 7) % 7;
      const day = new Date(Date.UTC(l.y, l.mo - 1, l.d - back));
      return midnight(day.getUTCFullYear(), day.getUTCMonth() + 1, day.getUTCDate(), tz);
    }
    case 'month':
      return midnight(l.y, l.mo, 1, tz);
  }
}

/** count and sum(v) per bucket, buckets ascending, over rows in [from, to). */
function reference(g: Granularity, tz: string, weekStartsOn: number, from: number, to: number) {
  const groups = new Map<number, { count: number; sum_v: number }>();
  for (const r of ROWS) {
    const t = Date.parse(r.ts);
    if (t < from || t >= to) continue;
    const b = bucketOf(t, g, tz, weekStartsOn);
    const acc = groups.get(b) ?? { count: 0, sum_v: 0 };
    acc.count++;
    acc.sum_v += r.v;
    groups.set(b, acc);
  }
  return [...groups.entries()].sort(([a], [b]) => a - b).map(([b, acc]) => ({ ts: new Date(b).toISOString(), ...acc }));
}

const query = (body: Record<string, unknown>, on: Service = svc, plan: Plan = 'starter') =>
  http('POST', `${on.url}/v1/analytics/query`, { headers: callerHeaders(account, { plan }), body: { sourceId: source, limit: 10_000, ...body } });

const config = (extra: Record<string, string> = {}) => loadAnalyticsConfig(serviceTestEnv(`analytics_tz_${suffix}`, prefix, { DATASET_DIR: feed.datasetDir, ...extra }));

beforeAll(async () => {
  feed = await startSourceFeed(prefix, 'analytics-tz-test');
  svc = await startAnalytics(config(), { logger });
  // Same database: the capped instance sees the same projection. One byte: every column a query reads is over.
  capped = await startAnalytics(config({ MAX_QUERY_BYTES_STARTER: '1', MAX_QUERY_BYTES_PROFESSIONAL: '0' }), { logger });
  const result = await feed.provide(account, source, { name: 'ticks', type: 'inline' }, ROWS);
  expect(result.schema).toEqual(columns({ id: 'integer', v: 'integer', ts: 'timestamp' }));
  await waitFor(async () => (await query({ measures: [{ op: 'count' }] })).status === 201, { what: 'the source projection', timeoutMs: 30_000 });
}, 60_000);

afterAll(async () => {
  await svc?.stop();
  await capped?.stop();
  await feed?.stop();
});

describe('time zones and week starts', () => {
  const cases: [string, Granularity, number][] = [];
  for (const tz of ['Europe/Berlin', 'America/New_York']) {
    for (const g of ['hour', 'day', 'month'] as Granularity[]) cases.push([tz, g, 1]);
    cases.push([tz, 'week', 0], [tz, 'week', 1]);
  }

  it.each(cases)('buckets %s by %s (week starts on %i) across its daylight-saving changes, from and to in local time', async (tz, g, weekStartsOn) => {
    // Local bounds (no offset): midnight in the zone. Each range holds a change of the clocks in both zones.
    const ranges: [string, string][] = [
      ['2024-03-03', '2024-04-08'],
      ['2024-10-20', '2024-11-10'],
    ];
    for (const [from, to] of ranges) {
      const res = await query({ measures: [{ op: 'count' }, { op: 'sum', field: 'v' }], timeDimension: { field: 'ts', granularity: g, timezone: tz, weekStartsOn, from, to } });
      expect(res.status).toBe(201);
      const [fy, fm, fd] = from.split('-').map(Number) as [number, number, number];
      const [ty, tm, td] = to.split('-').map(Number) as [number, number, number];
      const expected = reference(g, tz, weekStartsOn, midnight(fy, fm, fd, tz), midnight(ty, tm, td, tz));
      expect(expected.length).toBeGreaterThan(1);
      expect(res.body.rows).toEqual(expected);
    }
  });

  it('makes a 23-hour and a 25-hour day on the change days in Berlin, and two 02:00 hours the night the clocks go back', async () => {
    const day = await query({ measures: [{ op: 'count' }], timeDimension: { field: 'ts', granularity: 'day', timezone: 'Europe/Berlin', from: '2024-03-30', to: '2024-04-02' } });
    // Local midnights: CET (+01:00) before the change, CEST (+02:00) after.
    expect(day.body.rows.map((r: { ts: string }) => r.ts)).toEqual(['2024-03-29T23:00:00.000Z', '2024-03-30T23:00:00.000Z', '2024-03-31T22:00:00.000Z']);
    const hours = await query({
      measures: [{ op: 'count' }],
      timeDimension: { field: 'ts', granularity: 'hour', timezone: 'Europe/Berlin', from: '2024-10-27T01:00:00+02:00', to: '2024-10-27T04:00:00+01:00' },
    });
    // 01:00 CEST, 02:00 CEST, 02:00 CET, 03:00 CET: four hours in UTC.
    expect(hours.body.rows.map((r: { ts: string }) => r.ts)).toEqual([
      '2024-10-26T23:00:00.000Z',
      '2024-10-27T00:00:00.000Z',
      '2024-10-27T01:00:00.000Z',
      '2024-10-27T02:00:00.000Z',
    ]);
  });

  it('leaves a query without a time zone in UTC, weeks starting on Monday (positive control for the local buckets)', async () => {
    const res = await query({
      measures: [{ op: 'count' }, { op: 'sum', field: 'v' }],
      timeDimension: { field: 'ts', granularity: 'week', from: '2024-03-03T00:00:00Z', to: '2024-04-08T00:00:00Z' },
    });
    expect(res.status).toBe(201);
    expect(res.body.rows).toEqual(reference('week', 'UTC', 1, Date.parse('2024-03-03T00:00:00Z'), Date.parse('2024-04-08T00:00:00Z')));
    expect(res.body.rows).not.toEqual(reference('week', 'Europe/Berlin', 1, Date.parse('2024-03-03T00:00:00Z'), Date.parse('2024-04-08T00:00:00Z')));
  });

  it('refuses an unknown time zone and a week start out of range with 400 naming the field', async () => {
    for (const timezone of ['Mars/Olympus_Mons', "UTC'; DROP", '']) {
      const res = await query({ measures: [{ op: 'count' }], timeDimension: { field: 'ts', granularity: 'day', timezone } });
      expect(res.status).toBe(400);
      expect(res.body.code).toBe('validation_failed');
      expect(res.body.errors.map((e: { path: string }) => e.path)).toEqual(['timeDimension.timezone']);
    }
    const week = await query({ measures: [{ op: 'count' }], timeDimension: { field: 'ts', granularity: 'week', weekStartsOn: 7 } });
    expect(week.status).toBe(400);
    expect(week.body.errors.map((e: { path: string }) => e.path)).toEqual(['timeDimension.weekStartsOn']);
  });
});

describe('compareTo', () => {
  const sumOf = (from: string, to: string) => {
    const inRange = ROWS.filter((r) => Date.parse(r.ts) >= Date.parse(from) && Date.parse(r.ts) < Date.parse(to));
    return { count: inRange.length, sum_v: inRange.reduce((a, r) => a + r.v, 0) };
  };

  it('previousPeriod: each day of the week beside the same day of the week before, with the changes', async () => {
    const res = await query({
      measures: [{ op: 'count' }, { op: 'sum', field: 'v' }],
      timeDimension: { field: 'ts', granularity: 'day', from: '2024-03-08T00:00:00Z', to: '2024-03-15T00:00:00Z' },
      compareTo: 'previousPeriod',
    });
    expect(res.status).toBe(201);
    expect(res.body.columns.map((c: { name: string }) => c.name)).toEqual([
      'ts',
      'count',
      'count_previous',
      'count_change',
      'count_relativeChange',
      'sum_v',
      'sum_v_previous',
      'sum_v_change',
      'sum_v_relativeChange',
    ]);
    const expected = [];
    for (let d = 8; d < 15; d++) {
      const day = (n: number) => `2024-03-${String(n).padStart(2, '0')}T00:00:00Z`;
      const cur = sumOf(day(d), day(d + 1));
      const prev = sumOf(day(d - 7), day(d - 6));
      expected.push({
        ts: new Date(day(d)).toISOString(),
        count: cur.count,
        count_previous: prev.count,
        count_change: cur.count - prev.count,
        count_relativeChange: Number(((cur.count - prev.count) / prev.count).toPrecision(15)),
        sum_v: cur.sum_v,
        sum_v_previous: prev.sum_v,
        sum_v_change: cur.sum_v - prev.sum_v,
        sum_v_relativeChange: Number(((cur.sum_v - prev.sum_v) / prev.sum_v).toPrecision(15)),
      });
    }
    expect(res.body.rows).toEqual(expected);
  });

  it('previousYear in a time zone: March 2024 in Berlin beside March 2023 in Berlin', async () => {
    const res = await query({
      measures: [{ op: 'count' }],
      timeDimension: { field: 'ts', granularity: 'month', timezone: 'Europe/Berlin', from: '2024-03-01', to: '2024-04-01' },
      compareTo: 'previousYear',
    });
    expect(res.status).toBe(201);
    const cur = sumOf('2024-02-29T23:00:00Z', '2024-03-31T22:00:00Z').count;
    const prev = sumOf('2023-02-28T23:00:00Z', '2023-03-31T22:00:00Z').count;
    expect(res.body.rows).toEqual([
      { ts: '2024-02-29T23:00:00.000Z', count: cur, count_previous: prev, count_change: cur - prev, count_relativeChange: Number(((cur - prev) / prev).toPrecision(15)) },
    ]);
  });

  it('an explicit period without data: previous 0, relative change null', async () => {
    const res = await query({
      measures: [{ op: 'count' }, { op: 'max', field: 'ts', as: 'last' }],
      timeDimension: { field: 'ts', granularity: 'month', from: '2024-03-01T00:00:00Z', to: '2024-04-01T00:00:00Z' },
      compareTo: { from: '2022-03-01T00:00:00Z', to: '2022-04-01T00:00:00Z' },
    });
    expect(res.status).toBe(201);
    const cur = sumOf('2024-03-01T00:00:00Z', '2024-04-01T00:00:00Z').count;
    const last = ROWS.filter((r) => r.ts < '2024-04-01').at(-1)!.ts;
    expect(res.body.rows).toEqual([
      {
        ts: '2024-03-01T00:00:00.000Z',
        count: cur,
        count_previous: 0,
        count_change: cur,
        count_relativeChange: null,
        last: new Date(last).toISOString(),
        last_previous: null,
        last_change: null,
        last_relativeChange: null,
      },
    ]);
  });

  it('refuses a comparison without a range, and one that overlaps it, with 400 naming the field', async () => {
    const noRange = await query({ measures: [{ op: 'count' }], timeDimension: { field: 'ts', granularity: 'day', from: '2024-03-01T00:00:00Z' }, compareTo: 'previousPeriod' });
    expect(noRange.status).toBe(400);
    expect(noRange.body.errors).toEqual([{ path: 'compareTo', message: expect.stringContaining('from and to') }]);
    const noTime = await query({ measures: [{ op: 'count' }], compareTo: 'previousYear' });
    expect(noTime.status).toBe(400);
    expect(noTime.body.errors.map((e: { path: string }) => e.path)).toEqual(['compareTo']);
    const overlap = await query({
      measures: [{ op: 'count' }],
      timeDimension: { field: 'ts', granularity: 'day', from: '2024-03-01T00:00:00Z', to: '2024-03-10T00:00:00Z' },
      compareTo: { from: '2024-02-25T00:00:00Z', to: '2024-03-02T00:00:00Z' },
    });
    expect(overlap.status).toBe(400);
    expect(overlap.body.errors).toEqual([{ path: 'compareTo', message: expect.stringContaining('overlaps') }]);
  });
});

describe('cost: dry runs, statistics and the per-plan cap', () => {
  const SUM = { measures: [{ op: 'sum', field: 'v' }], timeDimension: { field: 'ts', granularity: 'month' } };

  it('a dry run answers the estimate and the plan, runs nothing and saves no report; a real run reports the same as its statistics', async () => {
    const list = () => http('GET', `${svc.url}/v1/analytics/reports?limit=100`, { headers: callerHeaders(account) });
    const before = (await list()).body.data.length;
    const dry = await query({ ...SUM, dryRun: true });
    expect(dry.status).toBe(200);
    const estimate = queryEstimateSchema.parse(dry.body);
    expect(estimate.estimate.rowsRead).toBe(ROWS.length);
    expect(estimate.estimate.rowGroupsTotal).toBeGreaterThanOrEqual(1);
    expect(estimate.estimate.bytesRead).toBeGreaterThan(0);
    expect(estimate.limit).toEqual({ plan: 'starter', maxBytesRead: 2 * 1024 ** 3, withinLimit: true });
    expect(estimate.plan.columns).toEqual([
      { name: 'ts', role: 'time' },
      { name: 'sum_v', role: 'measure' },
    ]);
    expect(estimate.plan.reads.sort()).toEqual(['ts', 'v']);
    expect(estimate.plan.operators.join('\n')).toMatch(/READ_PARQUET|TABLE_SCAN/);
    expect(JSON.stringify(dry.body)).not.toContain(feed.dir);
    expect((await list()).body.data.length).toBe(before);

    const real = await query(SUM);
    expect(real.status).toBe(201);
    const report = reportSchema.parse(real.body);
    expect(report.statistics).toEqual({ elapsedMs: expect.any(Number), rowsRead: ROWS.length, bytesRead: estimate.estimate.bytesRead });
    expect((await list()).body.data.length).toBe(before + 1);
    // A count reads no column (the row counts are in the footer); v alone reads less than v and ts.
    const count = queryEstimateSchema.parse((await query({ measures: [{ op: 'count' }], dryRun: true })).body);
    expect(count.estimate.bytesRead).toBe(0);
    const onlyV = queryEstimateSchema.parse((await query({ measures: [{ op: 'sum', field: 'v' }], dryRun: true })).body);
    expect(onlyV.estimate.bytesRead).toBeGreaterThan(0);
    expect(onlyV.estimate.bytesRead).toBeLessThan(estimate.estimate.bytesRead);
  });

  it('refuses a query over the plan cap with 422 naming the limit, before it runs; a dry run says it is over', async () => {
    const list = () => http('GET', `${svc.url}/v1/analytics/reports?limit=100`, { headers: callerHeaders(account) });
    const before = (await list()).body.data.length;
    const res = await query(SUM, capped);
    expect(res.status).toBe(422);
    expect(res.body.code).toBe('query_read_limit');
    expect(res.body.detail).toContain('maxBytesRead');
    expect(res.body.detail).toContain('starter plan');
    expect(res.body.detail).toContain('(1 bytes)');
    expect((await list()).body.data.length).toBe(before);
    // Positive controls: a count reads no bytes, and professional has no cap here.
    expect((await query({ measures: [{ op: 'count' }] }, capped)).status).toBe(201);
    expect((await query(SUM, capped, 'professional')).status).toBe(201);
    const dry = await query({ ...SUM, dryRun: true }, capped);
    expect(dry.status).toBe(200);
    expect(dry.body.limit).toEqual({ plan: 'starter', maxBytesRead: 1, withinLimit: false });
  });
});
