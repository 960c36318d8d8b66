import { SCOPES } from '../plans.ts';
import { API_OPERATIONS, allowedMethods, matchOperation, readOperationDocs } from './operations.ts';

/** A request path for an operation's template, each parameter filled in. */
const pathOf = (template: string) => template.replace(/\{(\w+)\}/g, (_m, name: string) => `${name}_9`);

describe('the /v1 route table', () => {
  it('routes every operation, at its own path, to itself with its parameters: no other route shadows it', () => {
    const misrouted = API_OPERATIONS.filter((op) => matchOperation(op.method, pathOf(op.path)).match?.operation !== op).map((op) => op.operationId);
    expect(misrouted).toEqual([]);
    expect(matchOperation('DELETE', '/sources/src_9').match).toMatchObject({ operation: { operationId: 'deleteSource', service: 'sources' }, params: { id: 'src_9' } });
    expect(matchOperation('PATCH', '/analytics/dashboards/dsh_1/tiles/t_2').match?.params).toEqual({ id: 'dsh_1', tileId: 't_2' });
    // HEAD is GET without the body.
    expect(matchOperation('HEAD', '/sources/src_9').match?.operation.operationId).toBe('getSource');
  });

  it("asks an API key for its service's read scope to read and its write scope to change anything (running a saved insight reads)", () => {
    const keyed = API_OPERATIONS.filter((op) => op.scope);
    const expected = (op: (typeof keyed)[number]) => `${op.service}:${op.method === 'get' || op.operationId === 'runInsight' ? 'read' : 'write'}`;
    expect(keyed.filter((op) => op.scope !== expected(op)).map((op) => `${op.operationId}: ${op.scope}`)).toEqual([]);
    // Every scope a key can hold guards some operation.
    expect(new Set(keyed.map((op) => op.scope))).toEqual(new Set(SCOPES));
    expect(matchOperation('POST', '/analytics/insights/ins_1/run').match?.operation.scope).toBe('analytics:read');
  });

  it('tells an unknown path (404) from a known path with the wrong method (405, with the methods it has)', () => {
    expect([matchOperation('GET', '/nope').match, allowedMethods('/nope')]).toEqual([null, []]);
    expect([matchOperation('PUT', '/sources').match, allowedMethods('/sources')]).toEqual([null, ['GET', 'HEAD', 'POST']]);
    expect([matchOperation('PUT', '/sources/src_1').match, allowedMethods('/sources/src_1')]).toEqual([null, ['GET', 'HEAD', 'PATCH', 'DELETE']]);
    expect([matchOperation('GET', '/sources/src_1/sync').match, allowedMethods('/sources/src_1/sync')]).toEqual([null, ['POST']]);
    expect(matchOperation('GET', '/sources/a/b/c').match).toBeNull();
    expect(matchOperation('GET', '/sources/%E0%A4%A').match).toBeNull();
    expect(allowedMethods('/sources/%E0%A4%A')).toEqual([]);
  });
});

describe("the operations' words (operation-docs.json)", () => {
  it('gives every operation its summary and its error notes by status', () => {
    expect(API_OPERATIONS.filter((op) => !op.summary).map((op) => op.operationId)).toEqual([]);
    expect(API_OPERATIONS.find((op) => op.operationId === 'getInsight')?.summary).toBe('Retrieve one insight.');
    expect(API_OPERATIONS.find((op) => op.operationId === 'retryDelivery')?.errorNotes?.[409]).toMatch(/^the message is not pending/);
  });

  it('refuses an operation without a summary, words for no operation, and a note on a status that is not an error', () => {
    const docs = { getThing: { summary: 'Get a thing.', errorNotes: { '404': 'no such thing' } } };
    expect(readOperationDocs(docs, ['getThing']).get('getThing')).toEqual({ summary: 'Get a thing.', errorNotes: { 404: 'no such thing' } });
    expect(() => readOperationDocs(docs, ['getThing', 'listThings'])).toThrow('listThings has no summary');
    expect(() => readOperationDocs(docs, [])).toThrow('no operation getThing');
    expect(() => readOperationDocs({ getThing: { summary: 'Get a thing.', errorNotes: { '200': 'fine' } } }, ['getThing'])).toThrow('notes 200');
  });
});
