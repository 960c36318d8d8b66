import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import kafkajs from 'kafkajs';
import { readEnvFile } from './env-file.ts';

/**
 * `bash deploy/local/cluster-drill.sh`, against a running `npm run cluster`: steady load through nginx while
 * the broker leading a busy partition, one replica of each service and one gateway are killed and Redis is
 * failed over through Sentinel; then what was lost, duplicated or over-admitted. Prints one JSON report.
 */
const root = join(import.meta.dirname, '..', '..');
const base = join(root, '.local', 'cluster');
const ready = readEnvFile(join(base, 'ready.env'));
if (!ready.GATEWAY_URL) throw new Error(`no cluster is ready (${join(base, 'ready.env')} is missing): run \`npm run cluster\` first`);
const env = readEnvFile(join(base, 'cluster.env'));
const nginx = ready.GATEWAY_URL!;
const gateways = [ready.GATEWAY_A_URL!, ready.GATEWAY_B_URL!];
const PHASE_MS = Number(process.env.DRILL_PHASE_MS ?? 15_000);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const log = (msg: string) => process.stderr.write(`[drill] ${new Date().toISOString().slice(11, 23)} ${msg}\n`);

const cli = (...args: string[]) =>
  JSON.parse(
    execFileSync(process.execPath, ['--no-warnings', join(root, 'services/accounts/src/cli.ts'), ...args], {
      env: { PATH: process.env.PATH ?? '', MONGO_URL: env.MONGO_URL!, MONGO_DB: 'dap_accounts' },
      encoding: 'utf8',
    }),
  ) as Record<string, string>;

async function call(url: string, key: string, method = 'GET', body?: unknown) {
  try {
    const res = await fetch(url, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : null,
      signal: AbortSignal.timeout(15_000),
    });
    return { status: res.status, body: (await res.json().catch(() => null)) as Record<string, unknown> | null };
  } catch (err) {
    return { status: 0, body: { error: (err as Error).message } };
  }
}

// Accounts: an enterprise one for the writes (its limit is far above the load), a starter one for the limiter.
const writer = cli('create-account', '--name', `drill-writer-${Date.now()}`, '--plan', 'enterprise');
const limited = cli('create-account', '--name', `drill-limited-${Date.now()}`, '--plan', 'starter');

// A webhook receiver: every delivery of every event, by webhook-id, and when each source's first came.
const deliveries = new Map<string, number>();
const deliveredAt = new Map<string, number>();
const receiver = createServer((req, res) => {
  const id = String(req.headers['webhook-id'] ?? '');
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    if (id) deliveries.set(id, (deliveries.get(id) ?? 0) + 1);
    try {
      const source = (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { data?: { id?: string } }).data?.id;
      if (source && !deliveredAt.has(source)) deliveredAt.set(source, Date.now());
    } catch {
      // not an event body: counted by webhook-id only
    }
    res.writeHead(204).end();
  });
});
await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', () => r()));
const hook = await call(`${nginx}/v1/webhooks`, writer.apiKey!, 'POST', { url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`, events: ['source.created'] });
if (hook.status !== 201) throw new Error(`webhook endpoint not created: ${hook.status} ${JSON.stringify(hook.body)}`);

// Revocation time to both gateways, measured before any fault.
async function revocationMs(): Promise<number[]> {
  const k = cli('create-key', '--account', writer.accountId!, '--name', `drill-revoke-${Date.now()}`);
  for (const g of gateways) await call(`${g}/v1/sources?limit=1`, k.apiKey!);
  cli('revoke-key', '--account', writer.accountId!, '--key', k.keyId!);
  const t0 = Date.now();
  return Promise.all(
    gateways.map(async (g) => {
      while ((await call(`${g}/v1/sources?limit=1`, k.apiKey!)).status !== 401) {
        if (Date.now() - t0 > 30_000) return -1;
        await sleep(20);
      }
      return Date.now() - t0;
    }),
  );
}
const revocation = await revocationMs();
log(`revocation reached the gateways in ${revocation.join(' and ')} ms`);

// Steady load: writes (acknowledged = 201 with an id) and the starter account's reads at 4/s (240 a minute
// against a limit of 100).
const acknowledged: string[] = [];
const acknowledgedAt = new Map<string, number>();
const statuses: Record<string, number> = {};
const admittedAt: number[] = [];
let running = true;
const writes = (async () => {
  for (let i = 0; running; i++) {
    const r = await call(`${nginx}/v1/sources`, writer.apiKey!, 'POST', { type: 'inline', name: `drill-${i}`, rows: [{ i, at: new Date().toISOString() }] });
    statuses[`write ${r.status}`] = (statuses[`write ${r.status}`] ?? 0) + 1;
    if (r.status === 201 && typeof r.body?.id === 'string') {
      acknowledged.push(r.body.id);
      acknowledgedAt.set(r.body.id, Date.now());
    }
    await sleep(100);
  }
})();
const reads = (async () => {
  while (running) {
    const started = Date.now();
    const r = await call(`${nginx}/v1/sources?limit=1`, limited.apiKey!);
    statuses[`limited ${r.status}`] = (statuses[`limited ${r.status}`] ?? 0) + 1;
    if (r.status === 200) admittedAt.push(started);
    await sleep(Math.max(0, 250 - (Date.now() - started)));
  }
})();

const { Kafka, logLevel } = kafkajs;
const kafka = new Kafka({ brokers: env.KAFKA_BROKERS!.split(','), clientId: 'drill', logLevel: logLevel.NOTHING });
const loadStartedAt = Date.now();
const faults: { at: string; secondsIntoLoad: number; what: string }[] = [];
const fault = (what: string) => {
  faults.push({ at: new Date().toISOString(), secondsIntoLoad: Math.round((Date.now() - loadStartedAt) / 1000), what });
  log(what);
};
const brokerKill = { at: 0 };

await sleep(PHASE_MS);
// The broker leading partition 0 of sources.events (the writes' events go through it).
{
  const admin = kafka.admin();
  await admin.connect();
  const meta = await admin.fetchTopicMetadata({ topics: ['sources.events'] });
  await admin.disconnect();
  const leader = meta.topics[0]!.partitions.find((p) => p.partitionId === 0)!.leader;
  const pid = Number(readFileSync(join(base, 'pids', `kafka-${leader}.pid`), 'utf8'));
  process.kill(pid, 'SIGKILL');
  brokerKill.at = Date.now();
  fault(`SIGKILL Kafka broker ${leader} (pid ${pid}), leader of sources.events partition 0`);
}
await sleep(PHASE_MS);
for (const name of ['ACCOUNTS', 'SOURCES', 'ANALYTICS', 'MODELS', 'WEBHOOKS']) {
  const pid = Number(ready[`PID_${name}_B`]);
  process.kill(pid, 'SIGKILL');
  fault(`SIGKILL ${name.toLowerCase()} replica b (pid ${pid})`);
}
await sleep(PHASE_MS);
process.kill(Number(ready.PID_GATEWAY_A), 'SIGKILL');
fault(`SIGKILL gateway a (pid ${ready.PID_GATEWAY_A}); nginx sends everything to gateway b`);
await sleep(PHASE_MS);
const sentinel = env
  .REDIS_URL!.replace(/^redis\+sentinel:\/\//, '')
  .split('/')[0]!
  .split(',')[0]!;
execFileSync('redis-cli', ['-h', sentinel.split(':')[0]!, '-p', sentinel.split(':')[1]!, 'SENTINEL', 'FAILOVER', 'dap']);
fault('Redis failed over through Sentinel (SENTINEL FAILOVER dap)');
await sleep(PHASE_MS);
running = false;
await Promise.all([writes, reads]);
log(`load stopped: ${acknowledged.length} acknowledged writes`);

// Lost acknowledged writes: each must be readable (services set a and gateway b are alive).
let lostWrites = 0;
for (const id of acknowledged) {
  let r = await call(`${nginx}/v1/sources/${id}`, writer.apiKey!);
  for (let i = 0; r.status !== 200 && r.status !== 404 && i < 5; i++) r = await call(`${nginx}/v1/sources/${id}`, writer.apiKey!);
  if (r.status !== 200) lostWrites++;
}

// Lost events: every acknowledged source has its source.created in Kafka (the outbox may still be publishing).
const created = new Set<string>();
const consumer = kafka.consumer({ groupId: `drill-${Date.now()}`, maxWaitTimeInMs: 200 });
await consumer.connect();
await consumer.subscribe({ topic: 'sources.events', fromBeginning: true });
await consumer.run({
  eachMessage: async ({ message }) => {
    const e = JSON.parse(message.value?.toString() ?? '{}') as { type?: string; subject?: string };
    if (e.type === 'source.created' && e.subject) created.add(e.subject);
  },
});
const deadline = Date.now() + 60_000;
while (Date.now() < deadline && acknowledged.some((id) => !created.has(id))) await sleep(500);
await consumer.disconnect();
const lostEvents = acknowledged.filter((id) => !created.has(id)).length;

// Webhooks: one delivery per event expected; wait for the stragglers (retries follow their schedule).
const webhookDeadline = Date.now() + 60_000;
while (Date.now() < webhookDeadline && acknowledged.some((id) => !deliveredAt.has(id))) await sleep(500);
receiver.close();

// Webhook lag: from a write's acknowledgement to its event's first delivery. Caught up = the last moment a
// delivery came more than LATE_MS after its write, counted from the broker kill (null: some never came).
const LATE_MS = 5_000;
const lagOf = (id: string) => (deliveredAt.get(id) ?? Infinity) - acknowledgedAt.get(id)!;
const late = acknowledged.filter((id) => lagOf(id) > LATE_MS);
const undelivered = acknowledged.filter((id) => !deliveredAt.has(id)).length;
const lastLate = Math.max(0, ...late.filter((id) => deliveredAt.has(id)).map((id) => deliveredAt.get(id)!));
const maxLagBy5s: number[] = [];
for (const id of acknowledged) {
  const bucket = Math.floor((acknowledgedAt.get(id)! - loadStartedAt) / 5_000);
  while (maxLagBy5s.length <= bucket) maxLagBy5s.push(0);
  maxLagBy5s[bucket] = Math.max(maxLagBy5s[bucket]!, Number.isFinite(lagOf(id)) ? lagOf(id) : -1);
}

// Over-admissions: the most 200s in any 60-s window, above the starter limit of 100.
let worst = 0;
for (let i = 0, j = 0; j < admittedAt.length; j++) {
  while (admittedAt[j]! - admittedAt[i]! >= 60_000) i++;
  worst = Math.max(worst, j - i + 1);
}

process.stdout.write(
  `${JSON.stringify(
    {
      phaseMs: PHASE_MS,
      faults,
      requests: statuses,
      acknowledgedWrites: acknowledged.length,
      acknowledgedWritesLost: lostWrites,
      eventsLost: lostEvents,
      webhooks: {
        distinct: deliveries.size,
        duplicates: [...deliveries.values()].reduce((n, c) => n + c - 1, 0),
        missing: undelivered,
        lateOver5s: late.length,
        caughtUpAfterBrokerKillMs: undelivered ? null : late.length ? lastLate - brokerKill.at : 0,
        maxLagMs: undelivered ? null : Math.max(0, ...acknowledged.map(lagOf)),
        maxLagMsByWriteTime5s: maxLagBy5s,
      },
      // While Redis fails over, a gateway that cannot reach it fails open to its own window of the limit
      // (docs/architecture.md): with one gateway alive, a 60-s window can admit the limit twice.
      rateLimit: { limitPer60s: 100, mostAdmittedIn60s: worst, overAdmissions: Math.max(0, worst - 100), overAdmissionBound: 100 },
      revocationMsToEachGateway: revocation,
    },
    null,
    2,
  )}\n`,
);
