/**
 * Soak (run by deploy/local/soak.sh, never by `npm test`): the whole system, every service its own process,
 * under 80 % of the professional plan's limit (800 requests/min) across a mix of endpoints for
 * SOAK_SECONDS (default 600). Every 10 s it samples each process's RSS (/proc/<pid>/status) and the Kafka
 * consumer lag of every consumer group of the run (committed offsets vs the topics' end offsets), then
 * prints a summary table and exits 1 if memory or lag did not stay flat, or if any request failed.
 */
import { Kafka, logLevel } from 'kafkajs';
import { startReceiver } from '@dap/testing';
import { memoryMB } from '../../deploy/bench/lib/procs.ts';
import { Load } from './load.ts';
import { FAULT_ENV, prepareAccount } from './scenario.ts';
import { Recorder, sleep, startSystem } from '../system.ts';

const SECONDS = Number(process.env.SOAK_SECONDS ?? 600);
const PER_MINUTE = Number(process.env.SOAK_PER_MINUTE ?? 800);
const SAMPLE_MS = 10_000;
/** Samples before this are warm-up (JIT, caches, pools) and not judged. */
const WARMUP_MS = Math.min(60_000, (SECONDS * 1000) / 5);

const rssMb = (pid: number | undefined): number | null => memoryMB(pid)?.rss ?? null;

/**
 * V8's young generation (new space) and the old space in use, from the process's metrics port: the young
 * generation grows in steps under allocation, which moves RSS without being a leak, while a leak raises
 * the old space's floor. Reported beside RSS so a step can be told apart from a leak.
 */
async function heapMb(url: string): Promise<{ newSpace: number; oldUsed: number } | null> {
  try {
    const text = await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(2_000) }).then((r) => r.text());
    const read = (metric: string, space: string) => Number(new RegExp(`^${metric}\\{space="${space}"[^}]*\\} (\\d+)`, 'm').exec(text)?.[1] ?? NaN) / 1_048_576;
    const heap = { newSpace: read('nodejs_heap_space_size_total_bytes', 'new'), oldUsed: read('nodejs_heap_space_size_used_bytes', 'old') };
    return Number.isFinite(heap.newSpace) && Number.isFinite(heap.oldUsed) ? heap : null;
  } catch {
    return null;
  }
}

async function main() {
  const receiver = await startReceiver();
  const rec = new Recorder();
  rec.keepBodies = false;
  const sys = await startSystem({ name: 'soak', env: { ...FAULT_ENV, LOG_LEVEL: 'info' } });
  const prefix = `soak${sys.suffix}.`;
  const kafka = new Kafka({ brokers: sys.stack.KAFKA_BROKERS.split(','), clientId: 'soak-lag', logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  const lag = async (): Promise<number> => {
    const groups = (await admin.listGroups()).groups.map((g) => g.groupId).filter((g) => g.startsWith(prefix));
    let total = 0;
    for (const groupId of groups) {
      for (const t of await admin.fetchOffsets({ groupId })) {
        const ends = await admin.fetchTopicOffsets(t.topic);
        for (const p of t.partitions) {
          const end = Number(ends.find((e) => e.partition === p.partition)?.high ?? 0);
          const committed = Number(p.offset);
          total += Math.max(0, end - (committed < 0 ? 0 : committed));
        }
      }
    }
    return total;
  };

  const samples: Array<{ t: number; rss: Record<string, number | null>; heap: Record<string, { newSpace: number; oldUsed: number } | null>; lag: number; requests: number }> = [];
  let exitCode = 0;
  try {
    const ctx = await prepareAccount(sys, rec, receiver.url, 'professional');
    const load = new Load({ rec, gw: sys.gw, headers: ctx.headers, perSecond: PER_MINUTE / 60, sourceId: ctx.sourceId, modelId: ctx.modelId, sinkUrl: `${receiver.url}/sink` });
    const t0 = Date.now();
    load.start();
    console.log(`[soak] ${PER_MINUTE}/min for ${SECONDS} s; logs in ${sys.logDir}`);
    while (Date.now() - t0 < SECONDS * 1000) {
      await sleep(SAMPLE_MS);
      const pids = sys.services.pids();
      const rss = Object.fromEntries(Object.entries(pids).map(([n, pid]) => [n, rssMb(pid)]));
      const urls = sys.services.metricsUrls;
      const heap = Object.fromEntries(await Promise.all(Object.keys(pids).map(async (n) => [n, await heapMb(urls[n as keyof typeof urls]!)] as const)));
      const s = { t: Math.round((Date.now() - t0) / 1000), rss, heap, lag: await lag(), requests: load.requests };
      samples.push(s);
      console.log(
        `[soak] t=${s.t}s requests=${s.requests} lag=${s.lag} rss(MB) ${Object.entries(rss)
          .map(([n, v]) => `${n}=${v}`)
          .join(' ')}`,
      );
      console.log(
        `[soak]   heap new/old-used (MB) ${Object.entries(heap)
          .map(([n, h]) => `${n}=${h ? `${h.newSpace.toFixed(0)}/${h.oldUsed.toFixed(1)}` : '?'}`)
          .join(' ')}`,
      );
    }
    await load.stop();

    const judged = samples.filter((s) => s.t * 1000 >= WARMUP_MS);
    const names = Object.keys(samples[0]?.rss ?? {});
    // Judged on the floor of each third after warm-up (the lowest sample, i.e. after a collection): a leak
    // raises the floor, while the garbage collector's sawtooth only moves the peaks.
    const third = Math.max(1, Math.floor(judged.length / 3));
    const rows: string[][] = [
      [
        'process',
        'floor, 1st third (MB)',
        'floor, last third (MB)',
        'max (MB)',
        'last (MB)',
        'floor growth',
        'flat',
        'young gen first/last (MB)',
        'old space used floor 1st/last third (MB)',
      ],
    ];
    let flat = true;
    for (const n of names) {
      const vals = judged.map((s) => s.rss[n]).filter((v): v is number => v !== null);
      if (!vals.length) continue;
      const first = Math.min(...vals.slice(0, third));
      const lastFloor = Math.min(...vals.slice(-third));
      const growth = lastFloor - first;
      const ok = growth <= Math.max(0.25 * first, 32) && growth <= 64;
      flat &&= ok;
      const heaps = judged.map((s) => s.heap[n]).filter((h): h is { newSpace: number; oldUsed: number } => Boolean(h));
      const young = heaps.length ? `${heaps[0]!.newSpace.toFixed(0)}/${heaps.at(-1)!.newSpace.toFixed(0)}` : '?';
      const old = heaps.length
        ? `${Math.min(...heaps.slice(0, third).map((h) => h.oldUsed)).toFixed(1)}/${Math.min(...heaps.slice(-third).map((h) => h.oldUsed)).toFixed(1)}`
        : '?';
      rows.push([
        n,
        first.toFixed(1),
        lastFloor.toFixed(1),
        Math.max(...vals).toFixed(1),
        vals[vals.length - 1]!.toFixed(1),
        `${growth >= 0 ? '+' : ''}${growth.toFixed(1)}`,
        ok ? 'yes' : 'NO',
        young,
        old,
      ]);
    }
    const lags = judged.map((s) => s.lag);
    const lagOk = lags.length > 0 && lags[lags.length - 1]! <= Math.max(100, PER_MINUTE / 6) && Math.max(...lags.slice(-3)) <= Math.max(200, PER_MINUTE / 3);
    rows.push([
      'kafka consumer lag (messages)',
      String(lags[0] ?? ''),
      String(lags[lags.length - 1] ?? ''),
      String(Math.max(...lags)),
      String(lags[lags.length - 1] ?? ''),
      '',
      lagOk ? 'yes' : 'NO',
      '',
      '',
    ]);
    const width = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
    console.log('\n[soak] summary');
    for (const r of rows) console.log(r.map((c, i) => c.padEnd(width[i]!)).join('  '));
    const failed = rec.responses.filter((r) => r.status >= 500 || r.status === 429 || r.error);
    console.log(`\n[soak] ${load.requests} requests (${load.summary()}), ${failed.length} failed (5xx, 429 or no answer), ${(load.requests / (SECONDS / 60)).toFixed(0)}/min`);
    if (!flat || !lagOk || failed.length) exitCode = 1;
  } finally {
    await admin.disconnect();
    await sys.stop();
    await receiver.close();
  }
  process.exit(exitCode);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
