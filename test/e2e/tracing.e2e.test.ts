import { createDapClient } from '@dap/sdk';
import { startReceiver, waitFor } from '@dap/testing';
import type { DeployableName } from '../../deploy/local/supervisor.ts';
import { startSystem, type System } from '../system.ts';

/**
 * One call followed from the client to its webhook receiver, with every process exporting its spans over
 * OTLP/HTTP to a collector in the test: the client's traceparent → gateway → sources (which writes
 * source.created to its outbox) → Kafka → webhooks' consumer → the delivery attempt, whose traceparent the
 * receiver gets. Each span must be the child of the one before, all in the client's trace.
 * Only the processes on that path run (analytics and models are not needed for it).
 */
const ON_PATH: readonly DeployableName[] = ['accounts', 'sources', 'webhooks', 'gateway'];
const TRACE_ID = '0af7651916cd43dd8448eb211c80319c';
const CLIENT_SPAN = 'b7ad6b7169203331';

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  service: string;
}
const SERVER = 2;
const CLIENT = 3;
const PRODUCER = 4;
const CONSUMER = 5;

let sys: System;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
let collector: Awaited<ReturnType<typeof startReceiver>>;
let apiKey = '';

/** Every span the collector got, with the service that sent it. */
function exported(): OtlpSpan[] {
  type Body = { resourceSpans: { resource: { attributes: { key: string; value: { stringValue?: string } }[] }; scopeSpans: { spans: Omit<OtlpSpan, 'service'>[] }[] }[] };
  return collector.received
    .filter((r) => r.path === '/v1/traces')
    .flatMap((r) =>
      (JSON.parse(r.body) as Body).resourceSpans.flatMap((rs) => {
        const service = rs.resource.attributes.find((a) => a.key === 'service.name')?.value.stringValue ?? '';
        return rs.scopeSpans.flatMap((ss) => ss.spans.map((s) => ({ ...s, service })));
      }),
    );
}

beforeAll(async () => {
  receiver = await startReceiver();
  collector = await startReceiver();
  sys = await startSystem({
    name: 'trc',
    only: ON_PATH,
    env: {
      LOG_LEVEL: 'info',
      // Not running: the gateway only needs their addresses.
      ANALYTICS_URL: 'http://127.0.0.1:9',
      MODELS_URL: 'http://127.0.0.1:9',
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
      OTEL_BSP_SCHEDULE_DELAY: '100',
    },
  });
  apiKey = sys.createAccount('Trace Corp', 'starter').apiKey;
}, 120_000);

afterAll(async () => {
  await sys?.stop();
  await receiver?.close();
  await collector?.close();
});

it("follows a client's traceparent from its request to its webhook receiver, every hop exported as a child of the last", async () => {
  const api = createDapClient({ baseUrl: sys.gw, apiKey });
  await api.webhooks.create({ url: `${receiver.url}/hooks`, events: ['source.created'] });

  const traced = createDapClient({ baseUrl: sys.gw, apiKey, headers: { traceparent: `00-${TRACE_ID}-${CLIENT_SPAN}-01`, tracestate: 'client=1' } });
  const created = await traced.sources.create({ name: 'traced', type: 'inline', rows: [{ a: 1 }] }).withResponse();
  expect(created.status).toBe(201);
  const traceresponse = created.headers.get('traceresponse')!;
  expect(traceresponse).toMatch(new RegExp(`^00-${TRACE_ID}-[0-9a-f]{16}-01$`));

  const delivery = await waitFor(() => receiver.received.find((r) => JSON.parse(r.body).type === 'source.created'), { timeoutMs: 30_000, what: 'source.created webhook' });
  const delivered = delivery.headers.traceparent as string;
  expect(delivered).toMatch(new RegExp(`^00-${TRACE_ID}-[0-9a-f]{16}-01$`));
  expect(delivery.headers.tracestate).toBe('client=1');

  // Each process exports its spans in its own batches, so the delivery's span may reach the collector before
  // the producer's: wait for the whole chain, from the span the receiver was told about up to the client's.
  const chainOf = (spans: OtlpSpan[]) => {
    const byId = new Map(spans.map((s) => [s.spanId, s]));
    const chain: OtlpSpan[] = [];
    for (let s = byId.get(delivered.split('-')[2]!); s; s = s.parentSpanId ? byId.get(s.parentSpanId) : undefined) chain.unshift(s);
    return chain;
  };
  const chain = await waitFor(
    () => {
      const found = chainOf(exported().filter((s) => s.traceId === TRACE_ID));
      return found[0]?.parentSpanId === CLIENT_SPAN ? found : null;
    },
    { timeoutMs: 20_000, what: 'every span from the client to the delivery at the collector' },
  );
  expect(chain.map((s) => ({ service: s.service, kind: s.kind, name: s.name }))).toEqual([
    { service: 'gateway', kind: SERVER, name: 'POST /v1/sources' },
    { service: 'sources', kind: SERVER, name: 'POST /v1/sources' },
    { service: 'sources', kind: PRODUCER, name: `send trc${sys.suffix}.sources.events` },
    { service: 'webhooks', kind: CONSUMER, name: `process trc${sys.suffix}.sources.events` },
    { service: 'webhooks', kind: CLIENT, name: 'webhook delivery' },
  ]);
  expect(chain[0]!.parentSpanId).toBe(CLIENT_SPAN);
  expect(chain[0]!.spanId).toBe(traceresponse.split('-')[2]);
  // Nothing secret went to the collector.
  const everything = collector.received.map((r) => r.body).join('');
  expect(everything).not.toContain(apiKey);
  expect(everything).not.toContain('/hooks');
}, 90_000);
