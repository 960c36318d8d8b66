import { request } from 'node:http';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { API_OPERATIONS, newId, type ApiOperation } from '@dap/contracts';
import { http, inlineSharedComponents, waitFor } from '@dap/testing';
import { bearer, signUp, startHarness } from './harness.ts';

/**
 * The OpenAPI document against the gateway's own code paths, operation by operation: every way the gateway
 * can refuse a request (credentials, scope, session-only, CSRF, body size, Idempotency-Key, a service that is
 * down) is provoked on every operation, and each answer's status must be documented for that operation.
 * Header values valid by the document must not be refused. The services' own statuses are checked end to end
 * by test/conformance.
 */
type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- the document is walked generically

let h: Awaited<ReturnType<typeof startHarness>>;
let gw: string;
let down: string;
let doc: Json;
let key: string;
let session: { cookie: string; csrf: string };
/** A second session, for logout: the first one must outlive the run. */
let spare: { cookie: string; csrf: string };
const observed: { op: string; status: number; why: string }[] = [];
const BODY_LIMIT = 2048;

beforeAll(async () => {
  h = await startHarness();
  gw = (await h.gateway({ BODY_LIMIT_BYTES: String(BODY_LIMIT), UPLOAD_LIMIT_BYTES: String(BODY_LIMIT) })).url;
  // Every data service "down": a port nothing listens on.
  const closed = 'http://127.0.0.1:9';
  down = (await h.gateway({ SOURCES_URL: closed, ANALYTICS_URL: closed, MODELS_URL: closed, WEBHOOKS_URL: closed })).url;
  doc = inlineSharedComponents((await http('GET', `${gw}/v1/openapi.json`)).body);
  key = (await h.newAccount('enterprise')).secret;
  session = await signUp(gw, { accountName: 'Contract' });
  spare = await signUp(gw, { accountName: 'Contract' });
}, 60_000);
afterAll(() => h?.stop());

const documented = (op: ApiOperation) => doc.paths[op.path][op.method] as Json;
const pathOf = (op: ApiOperation) => `/v1${op.path.replace(/\{(\w+)\}/g, () => newId('src'))}`;
/** Credentials that pass: a session for session-only operations, an all-scopes key for the rest. */
function credsFor(op: ApiOperation): Record<string, string> {
  const s = op.operationId === 'logout' ? spare : session;
  return op.auth === 'session' ? { cookie: s.cookie, 'x-csrf-token': s.csrf } : op.auth === 'public' ? {} : bearer(key);
}

async function call(base: string, op: ApiOperation, why: string, headers: Record<string, string>, body?: unknown) {
  const res = await http(op.method.toUpperCase(), `${base}${pathOf(op)}`, { headers, ...(body !== undefined ? { body } : {}) });
  // The echo upstream's successes say nothing about the services; every refusal is the gateway's or accounts'.
  if (res.status >= 400) observed.push({ op: op.operationId, status: res.status, why });
  return res;
}

/** A request whose declared length is over the limit, sent with node:http (fetch sends no body on a GET). */
function oversize(op: ApiOperation, headers: Record<string, string>): Promise<number> {
  const body = Buffer.alloc(BODY_LIMIT + 1, 'a');
  return new Promise((resolve, reject) => {
    const req = request(
      `${gw}${pathOf(op)}`,
      { method: op.method.toUpperCase(), headers: { ...headers, 'content-type': 'application/json', 'content-length': body.length } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode!));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

describe('every status the gateway answers is documented for the operation', () => {
  it('refuses missing and invalid credentials with a documented 401', async () => {
    for (const op of API_OPERATIONS.filter((o) => o.auth !== 'public')) {
      expect([op.operationId, (await call(gw, op, 'no credentials', {})).status]).toEqual([op.operationId, 401]);
      await call(gw, op, 'a malformed key', { authorization: 'Bearer nope' });
    }
  });

  it('refuses a key without the scope, a key on a session-only operation and a write without the CSRF token with a documented 403', async () => {
    const narrow = (await http('POST', `${gw}/v1/keys`, { headers: { cookie: session.cookie, 'x-csrf-token': session.csrf }, body: { name: 'narrow', scopes: ['webhooks:read'] } }))
      .body.secret as string;
    const otherNarrow = (
      await http('POST', `${gw}/v1/keys`, { headers: { cookie: session.cookie, 'x-csrf-token': session.csrf }, body: { name: 'narrow2', scopes: ['sources:read'] } })
    ).body.secret as string;
    for (const op of API_OPERATIONS) {
      if (op.scope) {
        const res = await call(gw, op, 'a key without the scope', bearer(op.scope === 'webhooks:read' ? otherNarrow : narrow));
        expect([op.operationId, res.status]).toEqual([op.operationId, 403]);
      }
      if (op.auth === 'session') expect([op.operationId, (await call(gw, op, 'an API key', bearer(key))).status]).toEqual([op.operationId, 403]);
      if (op.auth !== 'public' && op.method !== 'get') {
        const res = await call(gw, op, 'a session write without CSRF', { cookie: session.cookie });
        expect([op.operationId, res.status]).toEqual([op.operationId, 403]);
      }
    }
  });

  it('refuses a body over the limit with a documented 413, whatever the method', async () => {
    for (const op of API_OPERATIONS) {
      const status = await oversize(op, credsFor(op));
      observed.push({ op: op.operationId, status, why: 'a body over the limit' });
      expect([op.operationId, status]).toEqual([op.operationId, 413]);
    }
  });

  it('answers a reused Idempotency-Key with another body with a documented 422, except where the document says the header is not taken', async () => {
    for (const op of API_OPERATIONS.filter((o) => o.method === 'post')) {
      const takesKey = (documented(op).parameters as Json[]).some((p) => p.name === 'Idempotency-Key');
      const idem = `contract-${newId('req')}`;
      const bodies =
        op.operationId === 'signup'
          ? [0, 1].map((i) => ({ email: `idem-${i}-${newId('req').toLowerCase()}@example.com`, password: 'correct horse battery', accountName: 'Idem' }))
          : op.operationId === 'login'
            ? [0, 1].map((i) => ({ email: `nobody-${i}@example.com`, password: 'wrong password!' }))
            : op.operationId === 'rollKey'
              ? [{ gracePeriodSeconds: 1 }, { gracePeriodSeconds: 2 }]
              : [{ name: 'first' }, { name: 'second' }];
      const headers = { ...credsFor(op), 'idempotency-key': idem };
      const first = await call(gw, op, 'an Idempotency-Key, first use', headers, bodies[0]);
      const second = await call(gw, op, 'the same Idempotency-Key with another body', headers, bodies[1]);
      expect(first.status).toBeLessThan(500);
      if (takesKey) expect([op.operationId, second.status]).toEqual([op.operationId, 422]);
      // Where the header is not taken, both requests ran as new ones: sign-up made two accounts.
      else expect([op.operationId, second.status, second.headers.get('idempotent-replayed')]).toEqual([op.operationId, first.status, null]);
      if (op.operationId === 'signup') expect([first.status, second.status]).toEqual([201, 201]);
    }
  });

  it('answers a retry while the first request runs with a documented 409', async () => {
    const op = API_OPERATIONS.find((o) => o.operationId === 'createSource')!;
    const idem = `contract-${newId('req')}`;
    const before = h.upstream.seen.length;
    const slow = http('POST', `${gw}/v1/sources?delay=400`, { headers: { ...bearer(key), 'idempotency-key': idem }, body: { name: 'slow' } });
    await waitFor(() => h.upstream.seen.length > before, { what: 'the first request at the service' }); // it runs there now
    const res = await http('POST', `${gw}/v1/sources?delay=400`, { headers: { ...bearer(key), 'idempotency-key': idem }, body: { name: 'slow' } });
    observed.push({ op: op.operationId, status: res.status, why: 'a retry while the first runs' });
    expect(res.status).toBe(409);
    expect((await slow).status).toBe(201);
  });

  it('takes every Idempotency-Key the document allows and refuses the others with 400', async () => {
    const op = API_OPERATIONS.find((o) => o.operationId === 'createSource')!;
    const param = (documented(op).parameters as Json[]).find((p) => p.name === 'Idempotency-Key')!;
    const valid = new Ajv2020({ strict: false }).compile(param.schema);
    const candidates = ['', ' ', 'a', 'a b', 'x'.repeat(255), 'x'.repeat(256), '~!#$%&*+-.^_`|', 'tab\there', '"quoted"'];
    const disagreements: string[] = [];
    for (const candidate of candidates) {
      const res = await call(gw, op, `Idempotency-Key ${JSON.stringify(candidate)}`, { ...bearer(key), 'idempotency-key': candidate }, { name: `k-${newId('req')}` });
      if (valid(candidate) !== (res.status !== 400)) disagreements.push(`${JSON.stringify(candidate).slice(0, 20)}: document ${valid(candidate)}, gateway ${res.status}`);
    }
    expect(disagreements).toEqual([]);
    expect(valid('')).toBe(false);
  });

  it('answers with a documented 503 or 502 when the service behind an operation is down', async () => {
    for (const op of API_OPERATIONS.filter((o) => o.service !== 'accounts' && o.service !== 'gateway')) {
      const res = await call(down, op, 'the service is down', credsFor(op), op.method === 'post' ? {} : undefined);
      expect([op.operationId, res.status === 503 || res.status === 502]).toEqual([op.operationId, true]);
    }
  });

  it('documents every status observed above for its operation', () => {
    const undocumented = observed.filter((o) => {
      const op = API_OPERATIONS.find((x) => x.operationId === o.op)!;
      return !(String(o.status) in documented(op).responses);
    });
    expect(undocumented.map((o) => `${o.op} ${o.status} (${o.why})`)).toEqual([]);
    expect(observed.length).toBeGreaterThan(150);
  });
});
