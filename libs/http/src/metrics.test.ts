import { Router } from 'express';
import { createLogger } from '@dap/logger';
import { createHttpApp, finishApp, metricsOf } from './app.ts';
import { AppError } from './errors.ts';
import { createMetrics, HTTP_DURATION_METRIC, UNMATCHED_ROUTE } from './metrics.ts';
import { listen, type RunningServer } from './server.ts';

const logger = createLogger({ name: 'metrics-test', level: 'silent' });

function countOf(text: string, labels: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${HTTP_DURATION_METRIC}_count{`) && l.includes(labels));
  return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : 0;
}

describe('metrics', () => {
  let server: RunningServer;
  let other: RunningServer;

  beforeAll(async () => {
    const app = createHttpApp({ logger, bodyLimitBytes: 1024 });
    app.get('/v1/things/:id', (req, res) => void res.json({ id: req.params.id }));
    const router = Router();
    router.get('/items/:id', () => {
      throw new AppError('not_found', 'item was not found');
    });
    app.use('/v1', router);
    app.get('/v1/custom', (_req, res) => {
      res.locals.metricsRoute = '/v1/custom/{op}';
      res.status(202).end();
    });
    metricsOf(app)
      .counter({ name: 'dap_test_events_total', help: 'events seen by the test', labelNames: ['outcome'] })
      .inc({ outcome: 'ok' }, 3);
    server = await listen(finishApp(app, logger), '127.0.0.1', 0, { metricsPort: 0 });
    other = await listen(finishApp(createHttpApp({ logger: createLogger({ name: 'other', level: 'silent' }), bodyLimitBytes: 1024 }), logger), '127.0.0.1', 0, { metricsPort: 0 });
  });
  afterAll(async () => {
    await server.close();
    await other.close();
  });

  it('times requests by method, route pattern and status, and exposes default process metrics', async () => {
    for (const id of ['a1', 'b2', 'c3']) expect((await fetch(`${server.url}/v1/things/${id}`)).status).toBe(200);
    expect((await fetch(`${server.url}/v1/items/zz`)).status).toBe(404);
    expect((await fetch(`${server.url}/nowhere/42`)).status).toBe(404);
    expect((await fetch(`${server.url}/v1/custom`)).status).toBe(202);

    const res = await fetch(`${server.metricsUrl}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    const text = await res.text();
    expect(text).toContain(`# TYPE ${HTTP_DURATION_METRIC} histogram`);
    expect(countOf(text, 'method="GET",route="/v1/things/:id",status_code="200"')).toBe(3);
    expect(countOf(text, 'route="/v1/items/:id",status_code="404"')).toBe(1);
    expect(countOf(text, `route="${UNMATCHED_ROUTE}",status_code="404"`)).toBe(1);
    expect(countOf(text, 'route="/v1/custom/{op}",status_code="202"')).toBe(1);
    expect(text).toContain('service="metrics-test"');
    // Raw paths never become labels.
    expect(text).not.toMatch(/a1|b2|c3|nowhere/);
    expect(text).toMatch(/^process_cpu_user_seconds_total\{service="metrics-test"\} /m);
    expect(text).toMatch(/^nodejs_eventloop_lag_seconds\{/m);
    expect(text).toMatch(/^dap_test_events_total\{outcome="ok",service="metrics-test"\} 3$/m);
  });

  it('keeps one registry per app, so services sharing a process do not mix', async () => {
    const text = await (await fetch(`${other.metricsUrl}/metrics`)).text();
    expect(text).toContain('service="other"');
    expect(text).not.toContain('metrics-test');
    expect(text).not.toContain('dap_test_events_total');
  });

  it('serves metrics on the metrics port only, and that port serves nothing else', async () => {
    expect((await fetch(`${server.metricsUrl}/metrics`)).status).toBe(200);
    const api = await fetch(`${server.url}/metrics`);
    expect(api.status).toBe(404);
    expect(await api.text()).not.toContain(HTTP_DURATION_METRIC);
    for (const path of ['/healthz', '/v1/things/a1']) expect((await fetch(`${server.metricsUrl}${path}`)).status).toBe(404);
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    // Without a metrics port nothing serves them.
    const bare = await listen(finishApp(createHttpApp({ logger, bodyLimitBytes: 1024 }), logger), '127.0.0.1', 0);
    try {
      expect(bare.metricsUrl).toBeUndefined();
      expect((await fetch(`${bare.url}/metrics`)).status).toBe(404);
    } finally {
      await bare.close();
    }
  });

  it('returns the metric already registered under a name, and refuses a second type for it', () => {
    const m = createMetrics({ service: 's', defaultMetrics: false });
    const c = m.counter({ name: 'dap_x_total', help: 'x' });
    expect(m.counter({ name: 'dap_x_total', help: 'x' })).toBe(c);
    expect(() => m.gauge({ name: 'dap_x_total', help: 'x' })).toThrow(/another type/);
    const h = m.histogram({ name: 'dap_y_seconds', help: 'y', labelNames: ['outcome'], buckets: [0.1, 1] });
    h.observe({ outcome: 'ok' }, 0.5);
    expect(m.registry.getSingleMetric('dap_y_seconds')).toBe(h);
  });
});
