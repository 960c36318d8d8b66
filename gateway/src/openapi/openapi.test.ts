import { Ajv2020 } from 'ajv/dist/2020.js';
import { API_OPERATIONS, newId, operationTakesIdempotencyKey, type ApiOperation } from '@dap/contracts';
import { encodeCursor } from '@dap/http';
import { buildOpenApi } from './openapi.ts';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- the document is walked generically

const doc = buildOpenApi('https://api.example.com') as Json;
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

  it('documents errorCount on the problem body', () => {
    expect(doc.components.schemas.Problem.properties.errorCount).toMatchObject({ type: 'integer' });
  });
});
