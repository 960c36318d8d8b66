import { allowedMethods, matchOperation } from './operations.ts';

describe('the /v1 route table', () => {
  it('matches every spec endpoint to its service and scope', () => {
    const cases: [string, string, string, string][] = [
      ['GET', '/sources', 'sources', 'sources:read'],
      ['POST', '/sources', 'sources', 'sources:write'],
      ['DELETE', '/sources/src_1', 'sources', 'sources:write'],
      ['PATCH', '/sources/src_1', 'sources', 'sources:write'],
      ['GET', '/analytics/overview', 'analytics', 'analytics:read'],
      ['GET', '/analytics/reports/rpt_1', 'analytics', 'analytics:read'],
      ['POST', '/analytics/query', 'analytics', 'analytics:write'],
      ['GET', '/models', 'models', 'models:read'],
      ['POST', '/models/mdl_1/predict', 'models', 'models:write'],
      ['GET', '/models/mdl_1/metrics', 'models', 'models:read'],
      ['POST', '/webhooks', 'webhooks', 'webhooks:write'],
      ['DELETE', '/webhooks/whk_1', 'webhooks', 'webhooks:write'],
    ];
    for (const [method, path, service, scope] of cases) {
      const { match } = matchOperation(method, path);
      expect({ path, service: match?.operation.service, scope: match?.operation.scope }).toEqual({ path, service, scope });
    }
    expect(matchOperation('DELETE', '/sources/src_9').match?.params).toEqual({ id: 'src_9' });
    // HEAD is GET without the body.
    expect(matchOperation('HEAD', '/sources/src_9').match?.operation.operationId).toBe(matchOperation('GET', '/sources/src_9').match?.operation.operationId);
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
