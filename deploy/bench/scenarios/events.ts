import type { BenchContext, ScenarioResult } from '../lib/context.ts';
import { round } from '../lib/stats.ts';
import type { DeliveryBenchResult } from '../services/webhooks/delivery.bench.ts';
import { ownerBench } from './owner-bench.ts';

type RunDeliveryBench = (opts: Record<string, unknown>) => Promise<DeliveryBenchResult>;

const FILE = 'deploy/bench/services/webhooks/delivery.bench.ts';

/**
 * Event → signed webhook delivery at 200 events/s, and deliveries/s against a plain POST loop, measured by the
 * webhooks owner's bench (its own webhooks process and receiver process on the same test stack; events are
 * published to Kafka by the bench process, as a producing service would).
 */
export async function eventsScenario(ctx: BenchContext): Promise<ScenarioResult> {
  const run = await ownerBench<RunDeliveryBench>(ctx.root, FILE, 'runDeliveryBench');
  if (!run) throw new Error(`${FILE} is missing; the events figures need it`);
  const quick = ctx.opts.quick;
  const seconds = quick ? 5 : ctx.opts.reps * ctx.opts.durationSec;
  const throughputEvents = quick ? 1_000 : 4_000;
  const r = await run({
    eventsPerSec: 200,
    seconds,
    throughputEvents,
    plainSeconds: quick ? 2 : 5,
    log: (line: string) => ctx.log(`events: ${line}`),
  });
  const latencyMet = r.p50 < 10 && r.p99 < 100;
  return {
    targets: [
      {
        id: 'events.latency',
        scenario: 'events',
        figure: 'event → signed webhook at 200 events/s, p50 / p99',
        target: '< 10 ms / < 100 ms',
        value: `${round(r.p50)} / ${round(r.p99)} ms (max ${round(r.max)} ms, ${r.latencyEvents} events)`,
        met: latencyMet,
        detail: `${FILE}: events published to Kafka at a steady 200/s for ${seconds} s; latency from the producer's send to the receiver's arrival (a separate process)`,
      },
      {
        id: 'events.throughput_ratio',
        scenario: 'events',
        figure: 'deliveries/s vs plain HTTP POST loop, one request at a time',
        target: '(report)',
        value: `${round(r.ratio, 2)} (${r.deliveriesPerSec} vs ${r.plainPostPerSec}/s, one request at a time)`,
        met: null,
        detail: `a backlog of ${throughputEvents} events published at once, first publish → last arrival; the loop POSTs a delivery-sized body with the same headers to the same receiver, one request after another`,
      },
      {
        id: 'events.throughput_ratio_concurrent',
        scenario: 'events',
        figure: 'deliveries/s vs the same loop with as many requests in flight',
        target: '≥ 0.5',
        value: `${round(r.ratioConcurrent, 2)} (${r.deliveriesPerSec} vs ${r.plainPostConcurrentPerSec}/s with ${r.concurrency} in flight)`,
        met: r.ratioConcurrent >= 0.5,
        detail: `the baseline has as many requests in flight as the service may have to the one endpoint (${r.concurrency}: WEBHOOK_ENDPOINT_CONCURRENCY as the service's config reads it)`,
      },
      {
        id: 'events.lean_ceiling',
        scenario: 'events',
        figure: 'a pipeline that stores nothing, vs the same loop',
        target: '(report)',
        value: `${round(r.leanRatioConcurrent, 2)} (${r.leanPipelinePerSec} vs ${r.plainPostConcurrentPerSec}/s with ${r.concurrency} in flight)`,
        met: null,
        detail:
          "deploy/bench/services/webhooks/lean-pipeline.ts: the same backlog, pre-published, consumed by one kafkajs consumer that signs each event with the service's signing code and POSTs it, with nothing stored, claimed or validated; what Kafka, Node and the receiver allow on this machine before any durability",
      },
      {
        id: 'events.cpu_per_delivery',
        scenario: 'events',
        figure: 'CPU per delivery vs per plain POST (all processes)',
        target: '(report)',
        value: cpuBudget(r),
        met: null,
        detail:
          'user + system CPU from /proc of each process over the backlog (per delivery) and over the plain loop with the same requests in flight (per request); on a machine whose cores all these processes share, the throughput ratio cannot exceed the inverse ratio of these totals',
      },
    ],
    data: { source: FILE, ...r },
  };
}

/** `service 330 + MongoDB 105 + Kafka 27 + receiver 75 = 537 µs per delivery; loop 57 + receiver 36 = 93 µs per plain POST`. */
function cpuBudget(r: DeliveryBenchResult): string {
  const parts = (entries: [string, number | null][]) => {
    const known = entries.filter((e): e is [string, number] => e[1] !== null);
    const missing = entries.filter(([, v]) => v === null).map(([k]) => k);
    const sum = known.reduce((a, [, v]) => a + v, 0);
    return `${known.map(([k, v]) => `${k} ${v}`).join(' + ')} = ${sum} µs${missing.length ? ` (${missing.join(', ')} not measured)` : ''}`;
  };
  const d = r.cpuPerDeliveryUs;
  const p = r.cpuPerPlainPostUs;
  return `${parts([
    ['service', d.service],
    ['MongoDB', d.mongodb],
    ['Kafka', d.kafka],
    ['receiver', d.receiver],
  ])} per delivery; ${parts([
    ['loop', p.loop],
    ['receiver', p.receiver],
  ])} per plain POST`;
}
