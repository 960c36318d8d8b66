import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createLogger } from '@dap/logger';
import { activeCarrier, carrierOf, startTracing } from '@dap/tracing';
import { startTracingCollector, type TracingCollector } from '@dap/tracing/testing';
import { createHttpApp, createMetrics, finishApp, traceRequests } from './index.ts';
import express from 'express';

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const CLIENT_SPAN = '00f067aa0ba902b7';
const CLIENT = `00-${TRACE_ID}-${CLIENT_SPAN}-01`;

async function serve(app: express.Express) {
  const server = app.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => new Promise<void>((r) => server.close(() => r())) };
}

/** A service app whose route answers the trace context active in its handler, after the JSON body was parsed. */
function serviceApp() {
  const app = createHttpApp({ logger: createLogger({ name: 'test', level: 'silent' }), bodyLimitBytes: 1_000 });
  app.post('/v1/things/:id', async (req, res) => {
    await new Promise((r) => setImmediate(r));
    res.json({ active: activeCarrier() ?? null, body: req.body });
  });
  return finishApp(app, createLogger({ name: 'test', level: 'silent' }));
}

/** A POST whose body arrives in two parts, the second after the handler chain has started waiting for it. */
const slowPost = (url: string, headers: Record<string, string>) =>
  new Promise<unknown>((resolve, reject) => {
    const req = request(`${url}/v1/things/thg_1`, { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': '7', ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve(JSON.parse(Buffer.concat(chunks).toString())));
    });
    req.on('error', reject);
    req.write('{"a":');
    setTimeout(() => req.end('1}'), 50);
  });

const post = (url: string, headers: Record<string, string> = {}) =>
  fetch(`${url}/v1/things/thg_1`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ a: 1 }) });

describe('traceRequests', () => {
  describe('tracing off', () => {
    const tracing = startTracing({ serviceName: 'test', sampleRatio: 1 });
    afterAll(() => tracing.shutdown());

    it("keeps the caller's context active in the handler, through the JSON body parser", async () => {
      const s = await serve(serviceApp());
      try {
        const res = await post(s.url, { traceparent: CLIENT, tracestate: 'v=1' });
        expect(res.status).toBe(200);
        expect(await res.json()).toEqual({ active: { traceparent: CLIENT, tracestate: 'v=1' }, body: { a: 1 } });
        expect(await slowPost(s.url, { traceparent: CLIENT })).toEqual({ active: { traceparent: CLIENT }, body: { a: 1 } });
        // No context came in, none is made up (and an invalid one is ignored, not refused).
        expect(await (await post(s.url)).json()).toEqual({ active: null, body: { a: 1 } });
        const bad = await post(s.url, { traceparent: '00-zz-00-01' });
        expect(bad.status).toBe(200);
        expect(await bad.json()).toEqual({ active: null, body: { a: 1 } });
      } finally {
        await s.close();
      }
    });
  });

  describe('tracing on', () => {
    let otel: TracingCollector;
    beforeAll(async () => void (otel = await startTracingCollector()));
    afterAll(() => otel.close());

    it('records a server span named by route template, child of the caller, and answers traceresponse where asked', async () => {
      const app = express();
      app.use(createMetrics({ service: 'test' }).httpMiddleware()); // names the route, as in every app
      app.use(traceRequests({ traceResponse: true }));
      app.get('/v1/keys/:id', (req, res) => void res.json({ passedOn: carrierOf(req.traceContext!) }));
      const s = await serve(app);
      try {
        const res = await fetch(`${s.url}/v1/keys/key_1?token=secret-value`, { headers: { traceparent: CLIENT, authorization: 'Bearer dap_sk_secret' } });
        const { passedOn } = (await res.json()) as { passedOn: { traceparent: string } };
        const ours = passedOn.traceparent;
        expect(ours).toMatch(new RegExp(`^00-${TRACE_ID}-[0-9a-f]{16}-01$`));
        expect(ours).not.toContain(CLIENT_SPAN);
        expect(res.headers.get('traceresponse')).toBe(ours);
        await otel.tracing.flush();
        const bodies = otel.collector.received.filter((r) => r.path === '/v1/traces').map((r) => r.body);
        const spans = bodies.flatMap((b) => JSON.parse(b).resourceSpans[0].scopeSpans[0].spans);
        expect(spans).toHaveLength(1);
        expect(spans[0]).toMatchObject({ name: 'GET /v1/keys/:id', traceId: TRACE_ID, parentSpanId: CLIENT_SPAN, spanId: ours.split('-')[2] });
        // No credentials, raw paths or query strings in what is exported.
        for (const leak of ['secret', 'key_1', 'dap_sk']) expect(bodies.join('')).not.toContain(leak);
      } finally {
        await s.close();
      }
    });
  });
});
