import { connect, createServer, type Server, type Socket } from 'node:net';
import { stackEnv, TEST_INTERNAL_SECRET, uniqueSuffix } from '@dap/testing';
import { loadAccountsConfig } from '../../services/accounts/src/config.ts';
import { startAccounts } from '../../services/accounts/src/index.ts';

/**
 * The probes and the metrics endpoint that Kubernetes and Prometheus rely on, on a real service: /readyz
 * follows its MongoDB (through a TCP relay the test can cut), /metrics counts requests by route pattern.
 */
async function tcpRelay(target: URL): Promise<{ url: string; cut(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = connect(Number(target.port), target.hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => s.destroy());
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as { port: number };
  return {
    url: `mongodb://127.0.0.1:${port}`,
    cut: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
      }),
  };
}

/** The value of the sample `name{labels}` in the exposition text, whatever the label order; undefined if absent. */
function sample(text: string, name: string, labels: Record<string, string>): number | undefined {
  for (const line of text.split('\n')) {
    const m = /^([a-z_:]+)\{(.*)\} (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = Object.fromEntries([...m[2]!.matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((x) => [x[1], x[2]]));
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) return Number(m[3]);
  }
  return undefined;
}

const stack = stackEnv();
let relay: Awaited<ReturnType<typeof tcpRelay>>;
let svc: Awaited<ReturnType<typeof startAccounts>>;

beforeAll(async () => {
  relay = await tcpRelay(new URL(stack.MONGO_URL));
  const suffix = uniqueSuffix();
  svc = await startAccounts(
    loadAccountsConfig({
      HOST: '127.0.0.1',
      PORT: '0',
      METRICS_PORT: '0',
      LOG_LEVEL: 'silent',
      MONGO_URL: relay.url,
      MONGO_DB: `obs${suffix}_accounts`,
      KAFKA_BROKERS: stack.KAFKA_BROKERS,
      KAFKA_TOPIC_PREFIX: `obs${suffix}.`,
      INTERNAL_SECRET: TEST_INTERNAL_SECRET,
    }),
  );
}, 60_000);

afterAll(async () => {
  await svc?.stop();
  await relay?.cut();
});

it('exposes the request-duration histogram by route pattern on /metrics, on the metrics port only', async () => {
  expect((await fetch(`${svc.url}/healthz`)).status).toBe(200);
  expect((await fetch(`${svc.url}/v1/nothing-here/123`)).status).toBe(401); // unsigned: refused before routing
  expect((await fetch(`${svc.url}/metrics`)).status).toBe(404); // never on the API port
  const res = await fetch(`${svc.metricsUrl}/metrics`);
  expect(res.status).toBe(200);
  const text = await res.text();
  expect(sample(text, 'http_request_duration_seconds_count', { service: 'accounts', method: 'GET', route: '/healthz', status_code: '200' })).toBe(1);
  expect(sample(text, 'http_request_duration_seconds_bucket', { service: 'accounts', route: '(unmatched)', status_code: '401', le: '+Inf' })).toBe(1);
  expect(text).not.toContain('nothing-here');
  expect(sample(text, 'process_resident_memory_bytes', { service: 'accounts' })).toBeGreaterThan(0);
});

it('answers /readyz 200 while MongoDB answers, and 503 with a problem body once it is gone', async () => {
  const ok = await fetch(`${svc.url}/readyz`);
  expect(ok.status).toBe(200);
  expect(await ok.json()).toEqual({ status: 'ready' });

  await relay.cut();
  const down = await fetch(`${svc.url}/readyz`, { headers: { 'x-request-id': 'req_readiness_probe' } });
  expect(down.status).toBe(503);
  expect(down.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect(down.headers.get('retry-after')).toBe('5');
  expect(await down.json()).toMatchObject({ status: 503, code: 'unavailable', title: 'Service Unavailable', instance: '/readyz', requestId: 'req_readiness_probe' });
  // Liveness does not depend on MongoDB: a restart would not bring the database back.
  expect((await fetch(`${svc.url}/healthz`)).status).toBe(200);
}, 30_000);
