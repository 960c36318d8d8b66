import { Ajv2020 } from 'ajv/dist/2020.js';
import { createHmac, randomBytes } from 'node:crypto';
import {
  API_OPERATIONS,
  PUBLIC_EVENT_DESCRIPTIONS,
  PUBLIC_EVENT_TYPES,
  encodeCursor,
  newId,
  operationTakesIdempotencyKey,
  webhookPayloadSchema,
  type ApiOperation,
} from '@dap/contracts';
import { ERROR_CODES } from '@dap/errors';
import { verifyWebhook } from '@dap/sdk/webhooks';
import { inlineSharedComponents } from '@dap/testing';
import { buildOpenApi } from './openapi.ts';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- the document is walked generically

const raw = buildOpenApi('https://api.example.com') as Json;
/** The document with each operation's shared responses, parameters and headers written out. */
const doc = inlineSharedComponents(raw);
const operationOf = (op: ApiOperation) => doc.paths[op.path][op.method] as Json;
const ajv = new Ajv2020({ strict: false });

/** Values to try for a documented parameter, by its documented type (a query string carries them as text). */
function candidatesFor(schema: Json): unknown[] {
  if (schema.type === 'integer' || schema.type === 'number') return [-1, 0, 1, 20, 100, 101, 1.5, 1e9];
  return ['', 'a', 'abc_-09', 'a b', 'é', '!!', '%00', 'x'.repeat(200), 'x'.repeat(201), encodeCursor(newId('src')), encodeCursor('not an id')];
}

describe('the OpenAPI document and the server agree', () => {
  it("documents each query parameter as the server's schema takes it: a value is valid by the document exactly when the server's schema takes it", () => {
    const disagreements: string[] = [];
    for (const op of API_OPERATIONS.filter((o) => o.query)) {
      const params = (operationOf(op).parameters as Json[]).filter((p) => p.in === 'query');
      expect(params.length).toBeGreaterThan(0);
      for (const p of params) {
        const valid = ajv.compile(p.schema);
        for (const candidate of candidatesFor(p.schema)) {
          const server = op.query!.safeParse({ [p.name]: String(candidate) }).success;
          if (valid(candidate) !== server)
            disagreements.push(`${op.operationId} ${p.name}=${JSON.stringify(candidate).slice(0, 24)}: document ${valid(candidate)}, server ${server}`);
        }
      }
    }
    expect(disagreements).toEqual([]);
  });

  it('says which cursor the server takes: the nextCursor of the same list', () => {
    const cursor = (operationOf(API_OPERATIONS.find((o) => o.operationId === 'listSources')!).parameters as Json[]).find((p) => p.name === 'cursor')!;
    expect(cursor.description).toMatch(/nextCursor of the previous page of this same list.*refused with 400/);
    expect(cursor.schema).toMatchObject({ minLength: 1, maxLength: 200, pattern: '^[A-Za-z0-9_-]+$' });
  });

  it('documents, for every operation, the statuses its table entry, its credentials and Idempotency-Key can produce', () => {
    const missing: string[] = [];
    for (const op of API_OPERATIONS) {
      const o = operationOf(op);
      const expected = [
        400,
        413,
        429,
        500,
        502,
        503,
        ...op.errors,
        ...(op.auth !== 'public' || op.operationId === 'login' ? [401] : []),
        ...(op.scope || op.auth === 'session' || (op.auth !== 'public' && op.method !== 'get') ? [403] : []),
        ...(operationTakesIdempotencyKey(op) ? [409, 422] : []),
      ];
      for (const status of expected) if (!(String(status) in o.responses)) missing.push(`${op.operationId} ${status}`);
      const header = (o.parameters as Json[]).some((p) => p.name === 'Idempotency-Key');
      if (header !== operationTakesIdempotencyKey(op)) missing.push(`${op.operationId} Idempotency-Key documented: ${header}`);
    }
    expect(missing).toEqual([]);
  });

  it('does not offer Idempotency-Key on sign-up, login or logout, nor the 422 that came with it', () => {
    for (const id of ['signup', 'login', 'logout']) {
      const o = operationOf(API_OPERATIONS.find((x) => x.operationId === id)!);
      expect([id, (o.parameters as Json[]).map((p) => p.name), '422' in o.responses]).toEqual([id, [], false]);
    }
    // Positive control: a POST that takes it.
    const create = operationOf(API_OPERATIONS.find((x) => x.operationId === 'createSource')!);
    expect((create.parameters as Json[]).map((p) => p.name)).toEqual(['Idempotency-Key']);
    expect(create.responses['422'].description).toMatch(/may not reach.*Or: The Idempotency-Key was used before with a different request body/);
  });

  it('says once what operations share: the common problems, the list parameters, ids, Idempotency-Key and the success headers', () => {
    const get = raw.paths['/sources/{id}'].get as Json;
    const create = raw.paths['/sources'].post as Json;
    expect([get.responses['400'], get.responses['404'], get.responses['403']]).toEqual([
      { $ref: '#/components/responses/BadRequest' },
      { $ref: '#/components/responses/NotFound' },
      { $ref: '#/components/responses/Forbidden.sources-read' },
    ]);
    expect(raw.components.responses['Forbidden.sources-write.csrf'].description).toBe(
      'Forbidden: the API key lacks the sources:write scope; or a dashboard request did not send its x-csrf-token.',
    );
    expect(get.parameters).toEqual([{ $ref: '#/components/parameters/id' }]);
    expect(create.parameters).toEqual([{ $ref: '#/components/parameters/Idempotency-Key' }]);
    expect(raw.paths['/sources'].get.parameters).toEqual([{ $ref: '#/components/parameters/limit' }, { $ref: '#/components/parameters/cursor' }]);
    expect(create.responses['201'].headers.Location).toEqual({ $ref: '#/components/headers/Location' });
    // An operation's own words stay with it (createSource's 422), and a list's own filters are its own.
    expect(create.responses['422'].description).toMatch(/may not reach/);
    const deliveries = (raw.paths['/webhooks/{id}/deliveries'].get.parameters as Json[]).map((p) => p.$ref ?? p.name);
    expect(deliveries).toEqual(expect.arrayContaining(['#/components/parameters/id', '#/components/parameters/cursor', 'status']));
    // An upload's 413 says what it means, like every other operation's.
    expect(doc.paths['/sources/upload'].post.responses['413'].description).toBe('The request body is larger than the limit.');
  });

  it('documents errorCount on the problem body', () => {
    expect(doc.components.schemas.Problem.properties.errorCount).toMatchObject({ type: 'integer' });
  });

  it('lists every error code with its status and type page, in the table and for tools', () => {
    const code = doc.components.schemas.Problem.properties.code as Json;
    expect(code.type).toBe('string');
    expect(Object.keys(code['x-error-codes']).sort()).toEqual(Object.keys(ERROR_CODES).sort());
    expect(code['x-error-codes'].source_not_found).toEqual({ status: 404, type: '/docs/problems/not-found', meaning: ERROR_CODES.source_not_found.meaning });
    expect(code['x-error-codes'].model_not_ready).toMatchObject({ status: 409, type: '/docs/problems/conflict' });
    for (const c of Object.keys(ERROR_CODES)) expect(code.description).toContain(`| \`${c}\` | ${code['x-error-codes'][c].status} |`);
    // A problem with a code added later still validates: the code is documented, not an enum.
    expect(
      ajv.validate(doc.components.schemas.Problem, {
        type: '/docs/problems/conflict',
        title: 'Conflict',
        status: 409,
        detail: 'd',
        instance: '/v1/x',
        code: 'added_later',
        requestId: 'req_1',
      }),
    ).toBe(true);
  });
});

describe('examples and the webhook event catalog', () => {
  const components = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
  components.addSchema(JSON.parse(JSON.stringify({ $id: 'c', components: doc.components }).replaceAll('"#/components/schemas/', '"c#/components/schemas/')), 'c');
  const check = (schema: Json, value: unknown) => {
    const validate = components.compile(JSON.parse(JSON.stringify(schema).replaceAll('"#/components/schemas/', '"c#/components/schemas/')));
    return validate(value) ? 'valid' : components.errorsText(validate.errors);
  };

  it("gives every operation's request body and 2xx response an example that its schema takes", () => {
    const problems: string[] = [];
    for (const op of API_OPERATIONS) {
      const o = operationOf(op);
      const bodies: [string, Json][] = [];
      if (o.requestBody) bodies.push(['request', o.requestBody.content['application/json']]);
      for (const [status, r] of Object.entries(o.responses as Record<string, Json>))
        if (status.startsWith('2')) for (const [type, m] of Object.entries((r.content ?? {}) as Record<string, Json>)) bodies.push([`${status} ${type}`, m]);
      for (const [where, m] of bodies) {
        const schema = '$ref' in m.schema ? doc.components.schemas[m.schema.$ref.split('/').pop()] : m.schema;
        if (schema.format === 'binary') continue; // a Parquet file has no JSON example
        if (!('example' in m)) problems.push(`${op.operationId} ${where}: no example`);
        else if (check(m.schema, m.example) !== 'valid') problems.push(`${op.operationId} ${where}: ${check(m.schema, m.example)}`);
      }
    }
    expect(problems).toEqual([]);
    // Positive control: the check refuses an example that breaks its schema.
    expect(check(operationOf(API_OPERATIONS.find((x) => x.operationId === 'createSource')!).requestBody.content['application/json'].schema, { type: 'url' })).not.toBe('valid');
    expect(operationOf(API_OPERATIONS.find((x) => x.operationId === 'createSource')!).requestBody.content['application/json'].example).toMatchObject({
      type: 'url',
      name: 'Orders 2026',
    });
  });

  it('lists every public event type under webhooks, with its payload schema, a sample the SDK accepts, and the signature headers', () => {
    expect(Object.keys(doc.webhooks).sort()).toEqual([...PUBLIC_EVENT_TYPES].sort());
    for (const type of PUBLIC_EVENT_TYPES) {
      const post = doc.webhooks[type].post as Json;
      const m = post.requestBody.content['application/json'];
      expect({ type, sample: m.example.type, valid: check(m.schema, m.example) }).toEqual({ type, sample: type, valid: 'valid' });
      expect(webhookPayloadSchema.safeParse(m.example).success).toBe(true);
      expect((post.parameters as Json[]).map((p) => p.name)).toEqual(['webhook-id', 'webhook-timestamp', 'webhook-signature', 'traceparent', 'tracestate']);
      // what the event means comes first (the dashboard's event catalog shows that paragraph)
      expect(String(post.description).split('\n\n')[0]).toBe(PUBLIC_EVENT_DESCRIPTIONS[type]);
      // the schema is the delivery's own: another event's sample does not fit it
      const other = PUBLIC_EVENT_TYPES.find((t) => t !== type)!;
      expect(check(m.schema, doc.webhooks[other].post.requestBody.content['application/json'].example)).not.toBe('valid');
    }
    expect(doc.info.description).toMatch(/Standard Webhooks.*webhook-signature.*HMAC-SHA256.*verifyWebhook.*@dap\/sdk\/webhooks/s);
    expect(doc.info.description).toMatch(/## Tracing.*traceparent.*traceresponse.*webhook delivery/s);
  });

  it('resolves every $ref of the document, the webhooks included, and names each webhook operation once', () => {
    const refs = new Set<string>();
    const walk = (v: unknown): void => {
      if (Array.isArray(v)) v.forEach(walk);
      else if (v && typeof v === 'object')
        for (const [k, x] of Object.entries(v)) {
          if (k === '$ref' && typeof x === 'string') refs.add(x);
          else walk(x);
        }
    };
    walk(raw);
    expect(refs.size).toBeGreaterThan(20);
    const dangling = [...refs].filter((r) => {
      const [, kind, name] = /^#\/components\/(\w+)\/(.+)$/.exec(r) ?? [];
      return !kind || !name || !(name in (raw.components[kind] ?? {}));
    });
    expect(dangling).toEqual([]);
    expect([...refs]).toEqual(
      expect.arrayContaining([
        '#/components/schemas/SourceReadyEvent',
        '#/components/schemas/EndpointDisabledEvent',
        '#/components/responses/NotFound',
        '#/components/parameters/cursor',
        '#/components/headers/X-Request-Id',
      ]),
    );
    const ids = [...Object.values(doc.paths as Json).flatMap((p) => Object.values(p as Json)), ...Object.values(doc.webhooks as Json).map((w) => w.post)].map((o) => o.operationId);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('verifies a sample delivery signed as the recipe says, with the SDK', () => {
    const secret = `whsec_${randomBytes(24).toString('base64')}`;
    const body = JSON.stringify(doc.webhooks['report.completed'].post.requestBody.content['application/json'].example);
    const id = newId('evt');
    const ts = String(Math.floor(Date.now() / 1000));
    const sig = createHmac('sha256', Buffer.from(secret.slice('whsec_'.length), 'base64'))
      .update(`${id}.${ts}.${body}`)
      .digest('base64');
    const event = verifyWebhook(body, { 'webhook-id': id, 'webhook-timestamp': ts, 'webhook-signature': `v1,${sig}` }, { secrets: secret });
    expect(event).toMatchObject({ id, type: 'report.completed', known: true });
    expect(() => verifyWebhook(body, { 'webhook-id': id, 'webhook-timestamp': ts, 'webhook-signature': `v1,${sig.slice(1)}A` }, { secrets: secret })).toThrow();
  });
});
