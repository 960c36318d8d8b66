import { z } from 'zod';
import { API_OPERATIONS, type ApiOperation } from '@dap/contracts';
import { startReceiver } from '@dap/testing';
import { Recorder, reportFigures, startSystem, type System } from '../system.ts';
import { keyCaller, makeFixtures, pathOf, signup, validBodyOf, type Caller, type Fixtures } from './fixtures.ts';

/**
 * Bad input on every endpoint is a clear 4xx problem body, never a 500 and never a hang.
 * The endpoints come from API_OPERATIONS; the bad inputs are derived from each operation's request schema
 * (wrong types, missing and unknown fields) plus the generic ones (malformed JSON, huge and deep bodies,
 * invalid UTF-8, `$`-operator keys, wrong content type, empty body, malformed ids and queries).
 */
let sys: System;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
const rec = new Recorder();
let keyed: Caller;
let session: Caller;
let fx: Fixtures;
let sfx: Fixtures;
let tried = 0;

beforeAll(async () => {
  receiver = await startReceiver();
  sys = await startSystem({ name: 'bad' });
  keyed = keyCaller(sys.createAccount('Bad Input Co', 'enterprise').apiKey);
  session = await signup(rec, sys.gw, 'bad-session');
  [fx, sfx] = await Promise.all([makeFixtures(rec, sys.gw, keyed, receiver.url), makeFixtures(rec, sys.gw, session, receiver.url, { session: true })]);
}, 180_000);

afterAll(async () => {
  await sys?.stop();
  await receiver?.close();
  const fiveXX = rec.responses.filter((r) => r.status >= 500).length;
  reportFigures({ fault: 'bad input on every route', requests: tried, fiveXX, hangs: rec.responses.filter((r) => r.error === 'timeout').length });
  // eslint-disable-next-line no-console -- the count is part of the report
  console.log(`bad inputs tried: ${tried}, 5xx: ${fiveXX}`);
});

interface BadInput {
  what: string;
  /** Odd rather than bad: a 2xx is fine, a 5xx or a hang is not. */
  mayAccept?: boolean;
  path?: string;
  raw?: string | Uint8Array;
  body?: unknown;
  contentType?: string;
  method?: string;
}

const label = (o: ApiOperation) => `${o.method.toUpperCase()} ${o.path}`;
const MB = 1024 * 1024;

/** Field-level bad bodies from the operation's own schema: each property of the wrong type, missing, or unknown. */
function schemaDerived(o: ApiOperation, valid: unknown): BadInput[] {
  if (!o.body) return [];
  const out: BadInput[] = [];
  const json = z.toJSONSchema(o.body, { io: 'input', unrepresentable: 'any' }) as {
    properties?: Record<string, { type?: string }>;
    required?: string[];
    anyOf?: unknown[];
    oneOf?: unknown[];
  };
  const base = (valid && typeof valid === 'object' ? valid : {}) as Record<string, unknown>;
  const props = Object.keys(json.properties ?? base);
  const wrongValues: unknown[] = [12345, 'a string', true, null, [], {}, [{ $gt: '' }]];
  for (const p of props) {
    for (const w of wrongValues) {
      const body = { ...base, [p]: w };
      if (o.body.safeParse(body).success) continue; // that value happens to be valid here
      out.push({ what: `${p} = ${JSON.stringify(w)}`, body });
    }
    if (p in base) {
      const { [p]: _drop, ...missing } = base;
      if (!o.body.safeParse(missing).success) out.push({ what: `missing ${p}`, body: missing });
    }
  }
  out.push({ what: 'an unknown field', body: { ...base, unexpectedField: 1 } });
  const nested = Object.fromEntries(Object.entries(base).map(([k, v]) => [k, Array.isArray(v) && v[0] && typeof v[0] === 'object' ? [{ ...v[0], zzUnknown: 1 }] : v]));
  if (!o.body.safeParse(nested).success) out.push({ what: 'an unknown nested field', body: nested });
  out.push({ what: 'the body is an array', body: [base] });
  out.push({ what: 'the body is a string', body: 'hello' });
  out.push({ what: 'the body is null', raw: 'null', contentType: 'application/json' });
  out.push({ what: 'the body is a number', raw: '42', contentType: 'application/json' });
  return out;
}

function deep(n: number): unknown {
  let v: unknown = 1;
  for (let i = 0; i < n; i++) v = { a: v };
  return v;
}

/** A string field the schema accepts any text in (so a bad string there is the only thing wrong). */
function freeTextKey(o: ApiOperation, base: Record<string, unknown>): string | null {
  if (!o.body) return null;
  return Object.keys(base).find((k) => typeof base[k] === 'string' && o.body!.safeParse({ ...base, [k]: 'plain text' }).success) ?? null;
}

/**
 * Generic bad bodies. `structural` ones are refused whatever the operation (malformed or unreadable JSON, a
 * content type other than JSON, `$` keys, deep nesting, oversize); the others are bad only where the
 * operation takes a body (an operation without one may ignore a well-formed JSON body).
 */
function genericBodies(o: ApiOperation, valid: unknown): Array<BadInput & { structural?: boolean }> {
  const base = (valid && typeof valid === 'object' ? valid : {}) as Record<string, unknown>;
  const text = freeTextKey(o, base);
  const json = JSON.stringify(base);
  const withText = (v: string) => (text ? { ...base, [text]: v } : { ...base, note: v });
  const rawWithText = (bytes: Buffer) => {
    const marker = '"@@TEXT@@"';
    const [before, after] = JSON.stringify(withText('@@TEXT@@')).split(marker) as [string, string];
    return Buffer.concat([Buffer.from(`${before}"`), bytes, Buffer.from(`"${after}`)]);
  };
  return [
    { what: 'malformed JSON', raw: '{"a": 1,,}', contentType: 'application/json', structural: true },
    { what: 'truncated JSON', raw: json.slice(0, -1), contentType: 'application/json', structural: true },
    { what: 'single quotes', raw: "{'a': 1}", contentType: 'application/json', structural: true },
    { what: 'NaN literal', raw: '{"a": NaN}', contentType: 'application/json', structural: true },
    { what: 'trailing garbage', raw: `${json} x`, contentType: 'application/json', structural: true },
    { what: 'invalid UTF-8 (0xff 0xfe) in a string', raw: rawWithText(Buffer.from([0x61, 0xff, 0xfe, 0x62])), contentType: 'application/json', structural: true },
    { what: 'invalid UTF-8 (overlong /) in a string', raw: rawWithText(Buffer.from([0xc0, 0xaf])), contentType: 'application/json', structural: true },
    { what: 'invalid UTF-8 (lone continuation byte)', raw: rawWithText(Buffer.from([0x80])), contentType: 'application/json', structural: true },
    { what: 'UTF-16 declared charset', raw: json, contentType: 'application/json; charset=utf-16', structural: true },
    { what: 'text/plain content type', raw: json, contentType: 'text/plain', structural: true },
    { what: 'form content type', raw: 'a=1&b=2', contentType: 'application/x-www-form-urlencoded', structural: true },
    { what: 'no content type', raw: json, structural: true },
    { what: 'multipart content type', raw: '--x\r\nContent-Disposition: form-data; name="a"\r\n\r\n1\r\n--x--', contentType: 'multipart/form-data; boundary=x', structural: true },
    { what: 'a $-operator key at the top', body: { ...base, $where: 'sleep(1000)' }, structural: true },
    { what: 'a $-operator key nested', body: { ...base, nested: { deeper: [{ $ne: null }] } }, structural: true },
    { what: 'a __proto__ key', raw: `{"__proto__": {"admin": true}${json === '{}' ? '' : `, ${json.slice(1, -1)}`}}`, contentType: 'application/json', structural: true },
    { what: 'deep nesting (40)', body: { ...base, nested: deep(40) }, structural: true },
    { what: 'deep nesting (5000) as raw JSON', raw: `${'['.repeat(5000)}${']'.repeat(5000)}`, contentType: 'application/json', structural: true },
    { what: 'an oversize body (11 MiB)', raw: `{"name":"${'y'.repeat(11 * MB)}"}`, contentType: 'application/json', structural: true },
    { what: 'a $-operator value object', body: text ? { ...base, [text]: { $gt: '' } } : { ...base, $gt: '' } },
    { what: 'a lone surrogate in a string', body: withText('a\ud800b') },
    // Valid JSON and valid Unicode, merely odd: it may be accepted, but never with a 5xx.
    { what: 'NUL in a string', body: withText('a\u0000b'), mayAccept: true },
    { what: 'a constructor.prototype key', body: { ...base, constructor: { prototype: { admin: true } } } },
    // An operation whose body fields are all optional (a retrain) may take no body at all.
    { what: 'empty body with a JSON content type', raw: '', contentType: 'application/json', mayAccept: o.body?.safeParse({}).success === true },
    { what: 'whitespace body', raw: '   ', contentType: 'application/json' },
    { what: 'a huge string (1 MiB)', body: withText('x'.repeat(MB)) },
    { what: 'a huge array (200k)', body: { ...base, hugeArray: Array.from({ length: 200_000 }, (_, i) => i) } },
    { what: 'many keys (50k)', body: { ...base, ...Object.fromEntries(Array.from({ length: 50_000 }, (_, i) => [`k${i}`, i])) } },
  ];
}

/** Ids of the wrong shape for every path parameter. */
const BAD_IDS = [
  'x',
  'src_',
  'SRC_01ARZ3NDEKTSV4RRFFQ69G5FAV',
  'src_01ARZ3NDEKTSV4RRFFQ69G5FA',
  'src_01ARZ3NDEKTSV4RRFFQ69G5FAVV',
  'src_ILOU0000000000000000000000',
  'rpt_01ARZ3NDEKTSV4RRFFQ69G5FAV',
  `${'a'.repeat(5000)}`,
  '%00',
  '%E0%A4%A',
  '..%2F..%2Fetc%2Fpasswd',
  "1' OR '1'='1",
  '{"$gt":""}',
  '%7B%22%24ne%22%3A1%7D',
  '%F0%9F%92%A9',
  'null',
  'undefined',
  '-1',
  '0x10',
];

function badPaths(o: ApiOperation, f: Fixtures): BadInput[] {
  if (!o.path.includes('{')) return [];
  const out: BadInput[] = [];
  const params = [...o.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
  for (const p of params) {
    for (const bad of BAD_IDS) {
      const good = pathOf(o, f);
      // Replace only this parameter; the others keep real ids.
      const parts = o.path.split('/');
      const goodParts = good.replace(/^\/v1/, '').split('/');
      const path = `/v1${parts.map((seg, i) => (seg === `{${p}}` ? (bad.includes('%') ? bad : encodeURIComponent(bad)) : goodParts[i])).join('/')}`;
      out.push({ what: `{${p}} = ${bad.slice(0, 40)}`, path });
    }
  }
  return out;
}

function badQueries(o: ApiOperation, path: string): BadInput[] {
  if (o.method !== 'get') return [];
  const qs = [
    'limit=0',
    'limit=101',
    'limit=-1',
    'limit=abc',
    'limit=1e309',
    'limit=1.5',
    'limit[$gt]=1',
    'limit=1&limit=2',
    `cursor=${'z'.repeat(300)}`,
    'cursor=%ZZ',
    'cursor=bm90LWFuLWlk',
    'cursor[$ne]=x',
    'unknown=1',
    `${'q'.repeat(10_000)}=1`,
  ];
  // Only list operations take a query; any query on the others is refused or ignored, never a 500.
  return qs.map((q) => ({ what: `?${q.slice(0, 40)}`, path: `${path}?${q}` }));
}

describe.each(API_OPERATIONS.map((o) => [label(o), o] as const))('%s', (_n, o) => {
  it('refuses every bad input with a 4xx problem body, never a 5xx or a hang', async () => {
    const auth = o.auth ?? 'any';
    const f = auth === 'session' ? sfx : fx;
    const headers = auth === 'session' ? session.headers : auth === 'public' ? {} : keyed.headers;
    const path = pathOf(o, f);
    const valid = validBodyOf(o, f);
    const inputs: BadInput[] = [...badPaths(o, f), ...badQueries(o, path)];
    if (o.method !== 'get') inputs.push(...schemaDerived(o, valid), ...genericBodies(o, valid).filter((b) => o.body || b.structural));
    const failures: string[] = [];
    for (const input of inputs) {
      const h: Record<string, string> = { ...headers };
      if (input.contentType) h['content-type'] = input.contentType;
      const res = await rec.call(sys.gw, o.method.toUpperCase(), input.path ?? path, {
        headers: h,
        ...(input.body !== undefined ? { body: input.body } : {}),
        ...(input.raw !== undefined ? { raw: input.raw } : {}),
        // Generous for a busy 2-core machine; a request that never answers still fails here.
        timeoutMs: 20_000,
      });
      tried++;
      const problem = res.json as { status?: unknown; code?: unknown; requestId?: unknown } | undefined;
      const ok =
        !res.error &&
        res.status >= 400 &&
        res.status < 500 &&
        /^application\/problem\+json/.test(res.headers['content-type'] ?? '') &&
        problem?.status === res.status &&
        typeof problem?.code === 'string' &&
        typeof problem?.requestId === 'string';
      // A route without a query schema ignores the query string (a list route must refuse a bad one).
      const harmlessQuery = !o.query && input.path?.includes('?') && res.status < 300;
      const accepted = input.mayAccept && !res.error && res.status < 300;
      if (!ok && !harmlessQuery && !accepted) failures.push(`${input.what}: ${res.error ?? res.status} ${res.headers['content-type'] ?? ''} ${res.text.slice(0, 200)}`);
    }
    expect(failures).toEqual([]);
    expect(inputs.length).toBeGreaterThan(o.body ? 30 : o.method !== 'get' ? 15 : o.path.includes('{') ? 10 : 5);
  }, 120_000);
});

it('never answered a 5xx nor hung, over every bad input tried', () => {
  expect(rec.responses.filter((r) => r.status >= 500 || r.error).map((r) => `${r.method} ${r.path.slice(0, 80)} → ${r.error ?? r.status}`)).toEqual([]);
  expect(tried).toBeGreaterThan(1000);
});

describe('targeted bad inputs', () => {
  // Found by this suite: `expiresAt` used to take any string and end in a 500; the contract now requires an
  // ISO-8601 date-time.
  it('a key with an expiry that is not a date is refused with 400, and no key is made', async () => {
    // A fresh account: the bulk run above spends the first session account's per-minute quota.
    const session = await signup(rec, sys.gw, 'bad-date');
    const before = await rec.call(sys.gw, 'GET', '/v1/keys?limit=100', { headers: session.headers });
    for (const expiresAt of ['tomorrow', '2024-13-45T99:99:99Z', '']) {
      const res = await rec.call(sys.gw, 'POST', '/v1/keys', { headers: session.headers, body: { name: 'bad date', expiresAt } });
      tried++;
      expect([expiresAt, res.status]).toEqual([expiresAt, 400]);
    }
    const after = await rec.call(sys.gw, 'GET', '/v1/keys?limit=100', { headers: session.headers });
    expect(after.json.data.length).toBe(before.json.data.length);
  });

  it('a query whose time range is not made of dates is refused with a 4xx, never a 5xx', async () => {
    for (const from of ['tomorrow', '2024-13-45', 'x'.repeat(2000)]) {
      const res = await rec.call(sys.gw, 'POST', '/v1/analytics/query', {
        headers: keyed.headers,
        body: { sourceId: fx.source, measures: [{ op: 'count' }], timeDimension: { field: 'x', granularity: 'day', from } },
      });
      tried++;
      expect([from.slice(0, 20), res.status >= 400 && res.status < 500]).toEqual([from.slice(0, 20), true]);
    }
  });
});
