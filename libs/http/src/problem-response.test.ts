import { DomainError } from '@dap/errors';
import { createLogger } from '@dap/logger';
import { createHttpApp, finishApp } from './app.ts';
import { AppError } from './errors.ts';
import { listen, type RunningServer } from './server.ts';

/** A DomainError thrown by a route reaches the client as the problem of its code: status, headers and body. */
let server: RunningServer;

beforeAll(async () => {
  const logger = createLogger({ name: 'problem-response-test', level: 'silent' });
  const app = createHttpApp({ logger, bodyLimitBytes: 1024 });
  app.get('/busy', () => {
    throw new DomainError('source_sync_running', 'a sync of this source is running', { retryAfterSeconds: 5, cause: new Error('lease held by replica-7') });
  });
  app.get('/gone', async () => {
    throw new DomainError('report_not_found', 'report was not found');
  });
  app.get('/edge', () => {
    throw new AppError('method_not_allowed', 'GET is not allowed here', { headers: { Allow: 'POST' } });
  });
  app.get('/boom', () => {
    throw new Error('mongodb://admin:hunter2@db:27017 refused');
  });
  server = await listen(finishApp(app, logger), '127.0.0.1', 0);
});
afterAll(() => server.close());

const get = async (path: string) => {
  const res = await fetch(`${server.url}${path}`, { headers: { 'x-request-id': 'req_problem_test' } });
  return { res, body: (await res.json()) as Record<string, unknown> };
};

it('answers a domain conflict with 409, its own code, the conflict page and Retry-After, and no cause', async () => {
  const { res, body } = await get('/busy');
  expect([res.status, res.headers.get('retry-after'), res.headers.get('content-type')]).toEqual([409, '5', expect.stringMatching(/^application\/problem\+json/)]);
  expect(body).toEqual({
    type: '/docs/problems/conflict',
    title: 'Conflict',
    status: 409,
    detail: 'a sync of this source is running',
    instance: '/busy',
    code: 'source_sync_running',
    requestId: 'req_problem_test',
  });
  expect(JSON.stringify(body)).not.toContain('replica-7');
});

it('answers a rejected async route with 404 and the specific not-found code, without Retry-After', async () => {
  const { res, body } = await get('/gone');
  expect([res.status, res.headers.get('retry-after'), body.code, body.type]).toEqual([404, null, 'report_not_found', '/docs/problems/not-found']);
});

it("sends an edge error's own headers", async () => {
  const { res, body } = await get('/edge');
  expect([res.status, res.headers.get('allow'), body.code]).toEqual([405, 'POST', 'method_not_allowed']);
});

it('answers anything else with a 500 that says nothing internal', async () => {
  const { res, body } = await get('/boom');
  expect([res.status, body.code]).toEqual([500, 'internal']);
  expect(JSON.stringify(body)).not.toContain('hunter2');
});
