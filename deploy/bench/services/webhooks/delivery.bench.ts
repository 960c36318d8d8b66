import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { makeEvent, newId, SCOPES, signCallerContext, type DomainEvent } from '@dap/contracts';
import { createKafka, EventProducer } from '@dap/kafka';
import { createLogger } from '@dap/logger';
import { connectMongo } from '@dap/mongo';
import { repoRoot, stackEnv, uniqueSuffix } from '@dap/testing';
import { cpuTimeMs } from '../../lib/procs.ts';
import { loadWebhooksConfig } from '../../../../services/webhooks/src/config.ts';
import { spawnWebhooks, type ChildWebhooks } from '../../../../services/webhooks/test/process.ts';
import { leanPipelinePerSec } from './lean-pipeline.ts';

/**
 * The webhook figures of deploy/bench/README.md, measured side by side in one run against the running test (or dev) stack:
 * - event → delivery latency at a steady rate (from the producer's send to the receiver's arrival);
 * - deliveries/s with a backlog, against a plain HTTP POST loop to the same receiver (sequential, and with
 *   as many requests in flight as the service may have to it).
 * The service and the receiver run as their own processes, as in production; this process publishes
 * events and runs the plain loop.
 */
export interface DeliveryBenchOptions {
  /** Steady rate of the latency phase (default 200). */
  eventsPerSec?: number;
  /** Length of the latency phase (default 10). */
  seconds?: number;
  /** Events published at once for the throughput phase (default 4000). */
  throughputEvents?: number;
  /** Endpoints (one account each) the events are spread over (default 1). */
  endpoints?: number;
  /** Of those, how many answer 500 to every attempt (their events retry and are not waited for; at most endpoints − 1). */
  failingEndpoints?: number;
  /** Receiver think time per request (default 0). */
  receiverDelayMs?: number;
  /** Length of each plain-loop measurement (default 5). */
  plainSeconds?: number;
  /** Extra env for the service (e.g. WEBHOOK_ENDPOINT_CONCURRENCY). */
  serviceEnv?: Record<string, string>;
  /** Another build's main.ts to measure instead (for before/after comparisons). */
  entry?: string;
  /** Stack addresses; default the test stack's (stackEnv()). */
  stack?: { KAFKA_BROKERS: string; MONGO_URL: string };
  log?: (line: string) => void;
}

export interface DeliveryBenchResult {
  /** Event → delivery at `eventsPerSec`, ms. */
  p50: number;
  p99: number;
  max: number;
  latencyEvents: number;
  /** Signed deliveries per second with a backlog (first publish → last arrival). */
  deliveriesPerSec: number;
  /** A sequential POST loop (one request at a time) to the same receiver. */
  plainPostPerSec: number;
  /** The same loop with `concurrency` requests in flight, as many as the service may have to the receiver. */
  plainPostConcurrentPerSec: number;
  concurrency: number;
  ratio: number;
  ratioConcurrent: number;
  /**
   * A ceiling: deliveries/s of the leanest Kafka-fed pipeline (see lean-pipeline.ts: consume, sign, POST with
   * `concurrency` in flight, nothing stored), and its ratio to the loop with as many in flight.
   */
  leanPipelinePerSec: number;
  leanRatioConcurrent: number;
  /**
   * Machine CPU (user + system, µs) per delivery in the backlog, by process, and per request of the plain
   * loop with `concurrency` in flight: what the ratio costs, since on a small machine every process here
   * shares the same cores. A process the bench cannot see (no pid file of the stack) is null.
   */
  cpuPerDeliveryUs: { service: number | null; mongodb: number | null; kafka: number | null; receiver: number | null };
  cpuPerPlainPostUs: { loop: number; receiver: number | null };
}

const INTERNAL_SECRET = randomBytes(32).toString('hex');

/** A test stack process's id, from the pid file `deploy/local/stack.sh` writes (null if it did not start it). */
function stackPid(name: 'mongo' | 'kafka'): number | null {
  try {
    return Number(readFileSync(join(repoRoot(), '.local', 'test', 'pids', `${name}.pid`), 'utf8').trim()) || null;
  } catch {
    return null;
  }
}

/** CPU time (ms, from /proc) of each process, or null for one the bench cannot see. */
const cpuSample = <K extends string>(pids: Record<K, number | null>) =>
  Object.fromEntries(Object.entries<number | null>(pids).map(([k, pid]) => [k, pid === null ? null : cpuTimeMs(pid)])) as Record<K, number | null>;

/** CPU µs per unit of work of each process between two `cpuSample`s. */
function perUnitUs<K extends string>(before: Record<K, number | null>, after: Record<K, number | null>, units: number): Record<K, number | null> {
  return Object.fromEntries(
    Object.keys(before).map((k) => {
      const a = before[k as K],
        b = after[k as K];
      return [k, a === null || b === null ? null : Math.round(((b - a) / units) * 1e3)];
    }),
  ) as Record<K, number | null>;
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? NaN;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function startBenchReceiver(delayMs: number) {
  const child = spawn(process.execPath, ['--no-warnings', join(repoRoot(), 'deploy/bench/services/webhooks/receiver.ts')], {
    env: { PATH: process.env.PATH ?? '', RECEIVER_DELAY_MS: String(delayMs) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const port = await new Promise<number>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`bench receiver exited with ${code}`)));
    createInterface({ input: child.stdout! }).once('line', (l) => resolve(Number(l)));
  });
  const url = `http://127.0.0.1:${port}`;
  let seen = 0;
  const arrivals = new Map<string, number>();
  return {
    url,
    pid: child.pid!,
    /** Pulls new arrivals; keeps the first arrival of each webhook-id. */
    async poll(): Promise<Map<string, number>> {
      const res = await fetch(`${url}/arrivals?from=${seen}`);
      const rows = (await res.json()) as Array<[string, number]>;
      seen += rows.length;
      for (const [id, at] of rows) if (!arrivals.has(id)) arrivals.set(id, at);
      return arrivals;
    },
    stop: async () => {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/** The attempts' own latency (request sent → answer read) as the service recorded it, for the log. */
async function attemptLatencies(mongoUrl: string, db: string, eventIds: string[]): Promise<string> {
  const mongo = await connectMongo(mongoUrl, db);
  try {
    const ids = new Set(eventIds);
    const docs = await mongo.db
      .collection('deliveries')
      .find({}, { projection: { eventId: 1, attempts: 1 } })
      .toArray();
    const ms = docs
      .filter((d) => ids.has(d.eventId as string))
      .flatMap((d) => (d.attempts as Array<{ latencyMs: number }>).map((a) => a.latencyMs))
      .sort((a, b) => a - b);
    return ms.length ? ` latency p50 ${percentile(ms, 50)} ms, p99 ${percentile(ms, 99)} ms (${ms.length} recorded)` : '';
  } finally {
    await mongo.close();
  }
}

/** POSTs to `url` over a keep-alive agent with up to `maxSockets` connections; each call resolves once answered. */
function poster(url: string, maxSockets: number) {
  const agent = new http.Agent({ keepAlive: true, maxSockets });
  const target = new URL(url);
  const post = (body: string | Buffer, headers: Record<string, string>) =>
    new Promise<void>((resolve, reject) => {
      const payload = typeof body === 'string' ? Buffer.from(body) : body;
      const req = http.request(
        { method: 'POST', hostname: target.hostname, port: target.port, path: target.pathname, agent, headers: { ...headers, 'content-length': String(payload.length) } },
        (res) => {
          res.on('data', () => {});
          res.on('end', () => resolve());
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(payload);
    });
  return { post, close: () => agent.destroy() };
}

/** Requests/s of `concurrency` loops each POSTing `body` and awaiting the answer, for `seconds` (and how many were made). */
async function plainPostLoop(url: string, body: string, headers: Record<string, string>, concurrency: number, seconds: number): Promise<{ perSec: number; requests: number }> {
  const { post, close } = poster(`${url}/plain`, concurrency);
  const payload = Buffer.from(body);
  await post(payload, headers); // warm the connection
  let done = 0;
  const started = performance.now();
  const until = started + seconds * 1000;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < until) {
        await post(payload, headers);
        done++;
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  close();
  return { perSec: done / elapsed, requests: done };
}

/** What the throughput phase alone gives (see `runDeliveryThroughput`). */
export interface DeliveryThroughputResult {
  deliveriesPerSec: number;
  cpuPerDeliveryUs: DeliveryBenchResult['cpuPerDeliveryUs'];
  concurrency: number;
  endpoints: number;
  failingEndpoints: number;
  /** Events published in the backlog, and those to the failing endpoints among them (not waited for). */
  events: number;
  eventsToFailing: number;
}

/** The service, receiver and producer of one bench run, with its endpoints registered and warmed up. */
interface DeliveryRig {
  service: ChildWebhooks;
  receiver: Awaited<ReturnType<typeof startBenchReceiver>>;
  producer: EventProducer;
  kafka: ReturnType<typeof createKafka>;
  topicPrefix: string;
  mongoUrl: string;
  mongoDb: string;
  concurrency: number;
  /** The i-th event of a run; events go round-robin over the endpoints' accounts. */
  eventFor(i: number): DomainEvent;
  /** Whether an event goes to a failing endpoint (it is never waited for). */
  failing(e: DomainEvent): boolean;
  waitArrived(ids: string[], timeoutMs: number): Promise<Map<string, number>>;
  pids: { service: number; mongodb: number | null; kafka: number | null; receiver: number };
  /** Stops the service early (the lean pipeline runs without it); `close` then skips it. */
  stopService(): Promise<void>;
  log(line: string): void;
}

/**
 * Starts the receiver and the service, registers `endpoints` endpoints (one account each; the first
 * `failingEndpoints` of them at a path the receiver answers 500), warms up, runs `fn`, and removes
 * everything the run made (database, topics).
 */
async function withDeliveryRig<T>(opts: DeliveryBenchOptions, fn: (rig: DeliveryRig) => Promise<T>): Promise<T> {
  const endpointCount = opts.endpoints ?? 1;
  const failingCount = Math.min(opts.failingEndpoints ?? 0, endpointCount - 1);
  const log = opts.log ?? ((line: string) => process.stderr.write(`[webhooks bench] ${line}\n`));
  const stack = opts.stack ?? stackEnv();
  const suffix = uniqueSuffix();
  const env: Record<string, string> = {
    MONGO_URL: stack.MONGO_URL,
    MONGO_DB: `whbench${suffix}_webhooks`,
    KAFKA_BROKERS: stack.KAFKA_BROKERS,
    KAFKA_TOPIC_PREFIX: `whbench${suffix}.`,
    INTERNAL_SECRET,
    WEBHOOK_SECRET_KEY: randomBytes(32).toString('base64'),
    ALLOW_PRIVATE_TARGETS: '127.0.0.0/8,::1/128',
    LOG_LEVEL: 'warn',
    INSTANCE_ID: `bench-${suffix}`,
    ...opts.serviceEnv,
  };
  // The baseline's requests in flight are the service's own limits, read the way the service reads them
  // (its defaults included), so the two loops compare like with like.
  const limits = loadWebhooksConfig({ ...env, HOST: '127.0.0.1', PORT: '0' });
  const concurrency = Math.min(endpointCount * limits.WEBHOOK_ENDPOINT_CONCURRENCY, limits.WEBHOOK_MAX_IN_FLIGHT);

  const silent = createLogger({ name: 'bench', level: 'silent' });
  const settings = { brokers: stack.KAFKA_BROKERS.split(','), clientId: 'webhooks-bench', topicPrefix: env.KAFKA_TOPIC_PREFIX! };
  const receiver = await startBenchReceiver(opts.receiverDelayMs ?? 0);
  let service: ChildWebhooks | null = null;
  const kafka = createKafka(settings, silent);
  const producer = new EventProducer(kafka, settings);
  try {
    service = await spawnWebhooks(env, { entry: opts.entry });
    await producer.connect();
    const accounts: string[] = [];
    for (let i = 0; i < endpointCount; i++) {
      const accountId = newId('acct');
      const { context, signature } = signCallerContext(INTERNAL_SECRET, { accountId, plan: 'enterprise', scopes: [...SCOPES], requestId: newId('req'), issuedAt: Date.now() });
      const res = await fetch(`${service.url}/v1/webhooks`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-dap-context': context, 'x-dap-signature': signature },
        body: JSON.stringify({ url: `${receiver.url}/${i < failingCount ? 'fail' : 'hooks'}/${i}`, events: ['report.*'] }),
      });
      if (res.status !== 201) throw new Error(`registering an endpoint answered ${res.status}: ${await res.text()}`);
      accounts.push(accountId);
    }
    const failingAccounts = new Set(accounts.slice(0, failingCount));
    const eventFor = (i: number): DomainEvent =>
      makeEvent('report.completed', {
        accountId: accounts[i % accounts.length]!,
        subject: 'rpt',
        requestId: null,
        data: { id: newId('rpt'), sourceId: 'src_bench', rowCount: i, durationMs: 1 },
      });
    const failing = (e: DomainEvent) => failingAccounts.has(e.accountId);
    const waitArrived = async (ids: string[], timeoutMs: number) => {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const got = await receiver.poll();
        const missing = ids.filter((id) => !got.has(id)).length;
        if (!missing) return got;
        if (Date.now() > deadline) throw new Error(`${missing} of ${ids.length} events were not delivered within ${timeoutMs} ms`);
        await sleep(50);
      }
    };

    // Warm-up: connections, consumer assignment, JIT.
    const warm = Array.from({ length: Math.max(50, endpointCount) }, (_, i) => eventFor(i));
    await producer.publish(warm);
    await waitArrived(
      warm.filter((e) => !failing(e)).map((e) => e.id),
      60_000,
    );
    const running = service;
    return await fn({
      service: running,
      receiver,
      producer,
      kafka,
      topicPrefix: settings.topicPrefix,
      mongoUrl: stack.MONGO_URL,
      mongoDb: env.MONGO_DB!,
      concurrency,
      eventFor,
      failing,
      waitArrived,
      // The stack's pid files describe the test stack, the default; another stack's processes are not seen.
      pids: { service: running.pid, mongodb: opts.stack ? null : stackPid('mongo'), kafka: opts.stack ? null : stackPid('kafka'), receiver: receiver.pid },
      stopService: async () => {
        await running.kill('SIGTERM');
        service = null;
      },
      log,
    });
  } finally {
    await producer.disconnect().catch(() => {});
    await service?.kill('SIGTERM');
    await receiver.stop();
    const mongo = await connectMongo(stack.MONGO_URL, env.MONGO_DB!);
    await mongo.db.dropDatabase().finally(() => mongo.close());
    // Topics pile up on a shared broker and cost it CPU: leave none behind.
    const admin = kafka.admin();
    try {
      await admin.connect();
      const mine = (await admin.listTopics()).filter((t) => t.startsWith(settings.topicPrefix));
      if (mine.length) await admin.deleteTopics({ topics: mine });
    } catch (err) {
      log(`could not delete the bench topics: ${(err as Error).message}`);
    } finally {
      await admin.disconnect();
    }
  }
}

const us = (v: number | null) => (v === null ? 'n/a' : `${v} µs`);

/** Throughput with a backlog: `count` events published at once, timed from the first publish to the last arrival. */
async function backlogPhase(
  rig: DeliveryRig,
  count: number,
): Promise<{ deliveriesPerSec: number; cpuPerDeliveryUs: DeliveryBenchResult['cpuPerDeliveryUs']; ids: string[]; toFailing: number }> {
  rig.log(`throughput: ${count} events at once`);
  const backlog = Array.from({ length: count }, (_, i) => rig.eventFor(i));
  const expected = backlog.filter((e) => !rig.failing(e));
  const before = cpuSample(rig.pids);
  const t0 = Date.now();
  for (let i = 0; i < backlog.length; i += 500) await rig.producer.publish(backlog.slice(i, i + 500));
  const got = await rig.waitArrived(
    expected.map((e) => e.id),
    180_000,
  );
  const last = Math.max(...expected.map((e) => got.get(e.id)!));
  const after = cpuSample(rig.pids);
  const cpuPerDeliveryUs = perUnitUs(before, after, expected.length);
  const deliveriesPerSec = expected.length / ((last - t0) / 1000);
  const busy = before.service !== null && after.service !== null ? `, service CPU ${Math.round(((after.service - before.service) / (Date.now() - t0)) * 100)}%` : '';
  rig.log(
    `throughput: ${deliveriesPerSec.toFixed(0)} deliveries/s${busy}; CPU per delivery: service ${us(cpuPerDeliveryUs.service)}, ` +
      `MongoDB ${us(cpuPerDeliveryUs.mongodb)}, Kafka ${us(cpuPerDeliveryUs.kafka)}, receiver ${us(cpuPerDeliveryUs.receiver)}`,
  );
  return { deliveriesPerSec, cpuPerDeliveryUs, ids: expected.map((e) => e.id), toFailing: backlog.length - expected.length };
}

/** Deliveries/s with a backlog alone, over `endpoints` endpoints of which `failingEndpoints` answer 500 (how cost grows). */
export async function runDeliveryThroughput(opts: DeliveryBenchOptions = {}): Promise<DeliveryThroughputResult> {
  return withDeliveryRig(opts, async (rig) => {
    const r = await backlogPhase(rig, opts.throughputEvents ?? 4_000);
    return {
      deliveriesPerSec: Math.round(r.deliveriesPerSec),
      cpuPerDeliveryUs: r.cpuPerDeliveryUs,
      concurrency: rig.concurrency,
      endpoints: opts.endpoints ?? 1,
      failingEndpoints: Math.min(opts.failingEndpoints ?? 0, (opts.endpoints ?? 1) - 1),
      events: opts.throughputEvents ?? 4_000,
      eventsToFailing: r.toFailing,
    };
  });
}

export async function runDeliveryBench(opts: DeliveryBenchOptions = {}): Promise<DeliveryBenchResult> {
  const eventsPerSec = opts.eventsPerSec ?? 200;
  const seconds = opts.seconds ?? 10;
  const throughputEvents = opts.throughputEvents ?? 4_000;
  const endpointCount = opts.endpoints ?? 1;
  return withDeliveryRig(opts, async (rig) => {
    const { log, eventFor, producer, receiver, concurrency } = rig;
    // Latency at a steady rate: each due event is sent as soon as it is due.
    log(`latency: ${eventsPerSec} events/s for ${seconds} s over ${endpointCount} endpoint(s)`);
    const total = Math.round(eventsPerSec * seconds);
    const sentAt = new Map<string, number>();
    const start = performance.now();
    for (let i = 0; i < total;) {
      const due = Math.min(total, Math.floor(((performance.now() - start) / 1000) * eventsPerSec) + 1);
      const batch: DomainEvent[] = [];
      for (; i < due; i++) batch.push(eventFor(i));
      if (batch.length) {
        const now = Date.now();
        for (const e of batch) if (!rig.failing(e)) sentAt.set(e.id, now);
        await producer.publish(batch);
      }
      await sleep(1);
    }
    const arrived = await rig.waitArrived([...sentAt.keys()], 60_000);
    const latencies = [...sentAt].map(([id, at]) => arrived.get(id)! - at).sort((a, b) => a - b);
    const p50 = percentile(latencies, 50);
    const p99 = percentile(latencies, 99);
    const max = latencies[latencies.length - 1]!;
    log(`latency: p50 ${p50} ms, p99 ${p99} ms, max ${max} ms over ${latencies.length} events`);

    const { deliveriesPerSec, cpuPerDeliveryUs, ids } = await backlogPhase(rig, throughputEvents);
    // Read after the line above, so that whoever samples CPU at it leaves this read of every delivery out.
    log(`throughput: attempts${await attemptLatencies(rig.mongoUrl, rig.mongoDb, ids)}`);
    // The plain loops: the same receiver, a delivery-sized body and headers, no pipeline.
    const sample = eventFor(0);
    const body = JSON.stringify({ type: sample.type, timestamp: sample.occurredAt, data: sample.data });
    const headers = { 'content-type': 'application/json', 'webhook-id': 'plain', 'webhook-timestamp': '0', 'webhook-signature': `v1,${'A'.repeat(43)}=` };
    const plainSeconds = opts.plainSeconds ?? 5;
    const { perSec: plainPostPerSec } = await plainPostLoop(receiver.url, body, headers, 1, plainSeconds);
    const loop0 = process.cpuUsage();
    const plainBefore = cpuSample({ receiver: receiver.pid });
    const { perSec: plainPostConcurrentPerSec, requests } = await plainPostLoop(receiver.url, body, headers, concurrency, plainSeconds);
    const loopUs = process.cpuUsage(loop0);
    const cpuPerPlainPostUs = { loop: Math.round((loopUs.user + loopUs.system) / requests), ...perUnitUs(plainBefore, cpuSample({ receiver: receiver.pid }), requests) };
    log(
      `plain POST loop: ${plainPostPerSec.toFixed(0)}/s sequential, ${plainPostConcurrentPerSec.toFixed(0)}/s with ${concurrency} in flight; ` +
        `CPU per request: loop ${cpuPerPlainPostUs.loop} µs, receiver ${us(cpuPerPlainPostUs.receiver)}`,
    );

    // The ceiling, after the service has stopped: the same backlog through a pipeline that stores nothing.
    await rig.stopService();
    const lean = poster(`${receiver.url}/lean`, concurrency);
    const leanPerSec = await leanPipelinePerSec({
      kafka: rig.kafka,
      topic: `${rig.topicPrefix}lean`,
      events: Array.from({ length: throughputEvents }, (_, i) => eventFor(i)),
      post: lean.post,
      concurrency,
    }).finally(lean.close);
    log(`lean pipeline (Kafka → sign → POST, nothing stored): ${leanPerSec.toFixed(0)} deliveries/s with ${concurrency} in flight`);

    return {
      p50,
      p99,
      max,
      latencyEvents: latencies.length,
      deliveriesPerSec: Math.round(deliveriesPerSec),
      plainPostPerSec: Math.round(plainPostPerSec),
      plainPostConcurrentPerSec: Math.round(plainPostConcurrentPerSec),
      concurrency,
      ratio: Math.round((deliveriesPerSec / plainPostPerSec) * 100) / 100,
      ratioConcurrent: Math.round((deliveriesPerSec / plainPostConcurrentPerSec) * 100) / 100,
      leanPipelinePerSec: Math.round(leanPerSec),
      leanRatioConcurrent: Math.round((leanPerSec / plainPostConcurrentPerSec) * 100) / 100,
      cpuPerDeliveryUs,
      cpuPerPlainPostUs,
    };
  });
}
