import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { newId } from '@dap/contracts';
import { callerHeaders, repoRoot, stackEnv, TEST_INTERNAL_SECRET, uniqueSuffix } from '@dap/testing';
import { memoryMB } from '../../lib/procs.ts';
import { freePort, nodeFlagsOf, waitHealthy } from '../../../local/supervisor.ts';
import { ordersCsvChunks, writeOrdersCsv } from './ingest.bench.ts';

/**
 * Soak: a large CSV (default 1 GiB) pulled from a URL into the dataset store, by the sources service running
 * as its own process with its node flags (`nodeFlagsOf`, as the supervisor and the images run it), while the
 * kernel's peak-RSS counter (VmHWM) of that process is watched. Fails when the peak passes the budget
 * (default 400 MB). Mode `upload`: the CSV is generated on the fly and streamed as the body of
 * `POST /v1/sources/upload` instead (no file on the sending side), so the peak covers receiving it too.
 * Run with `bash deploy/local/soak-ingest.sh [MiB] [budget MB] [url|upload]`; `npm test` runs it at 1 GiB
 * and at 30 MiB from a URL, and at 1 GiB uploaded (test/memory.int.test.ts).
 */
const targetMiB = Number(process.argv[2] ?? 1024);
const budgetMB = Number(process.argv[3] ?? 400);
const mode = process.argv[4] ?? 'url';
if (mode !== 'url' && mode !== 'upload') throw new Error(`mode must be url or upload, not ${mode}`);
/** Service settings passed through from this process's environment when set. */
const TUNABLES = ['DUCKDB_MEMORY_LIMIT', 'INGEST_PARALLEL_MAX_BYTES', 'DUCKDB_JE_MALLOC_CONF'];
const ROW_BYTES = 61; // what writeOrdersCsv writes per row, on average

/** RSS now and the kernel's peak of it, in whole MB. */
function memoryOf(pid: number): { rssMB: number; peakMB: number } {
  const m = memoryMB(pid);
  if (!m) throw new Error(`cannot read the memory of process ${pid}`);
  return { rssMB: Math.round(m.rss), peakMB: Math.round(m.peak) };
}

async function main(): Promise<number> {
  const root = repoRoot();
  const dir = await mkdtemp(join(tmpdir(), 'dap-soak-'));
  const children: ChildProcess[] = [];
  try {
    const rows = Math.round((targetMiB * 1024 * 1024) / ROW_BYTES);
    let bytes = 0;
    let filesPort = 0;
    if (mode === 'url') {
      process.stdout.write(`[soak] writing a ${targetMiB} MiB CSV (${rows.toLocaleString('en')} rows)...\n`);
      const file = join(dir, 'orders.csv');
      bytes = await writeOrdersCsv(file, rows);
      filesPort = await freePort();
      const files = spawn(
        process.execPath,
        [
          '-e',
          `require('node:http').createServer((q, r) => { r.writeHead(200, { 'content-type': 'text/csv', 'content-length': require('node:fs').statSync(process.argv[1]).size }); require('node:fs').createReadStream(process.argv[1], { highWaterMark: 1 << 20 }).pipe(r); }).listen(${filesPort}, '127.0.0.1')`,
          file,
        ],
        { stdio: 'inherit' },
      );
      children.push(files);
    }

    const port = await freePort();
    const suffix = uniqueSuffix();
    const svc = spawn(process.execPath, ['--no-warnings', ...nodeFlagsOf('sources'), join(root, 'services/sources/src/main.ts')], {
      cwd: root,
      stdio: ['ignore', 'ignore', 'inherit'],
      env: {
        PATH: process.env.PATH ?? '',
        ...stackEnv(),
        HOST: '127.0.0.1',
        PORT: String(port),
        MONGO_DB: `soak_src_${suffix}`,
        KAFKA_TOPIC_PREFIX: `soak${suffix}.`,
        INTERNAL_SECRET: TEST_INTERNAL_SECRET,
        SOURCE_CREDENTIALS_KEY: randomBytes(32).toString('base64'),
        ALLOW_PRIVATE_TARGETS: '127.0.0.0/8,::1/128',
        DATASET_DIR: join(dir, 'datasets'),
        LOG_LEVEL: 'warn',
        // The default cap (2 GiB) refuses the larger growth sizes; an operator with such sources raises it.
        SOURCE_MAX_BYTES: String(Math.max(2 * 1024 ** 3, 2 * targetMiB * 1024 ** 2)),
        // An operator's tuning, to compare settings: `DUCKDB_MEMORY_LIMIT=128MB bash deploy/local/soak-ingest.sh`.
        ...Object.fromEntries(TUNABLES.flatMap((k) => (process.env[k] ? [[k, process.env[k]]] : []))),
      },
    });
    children.push(svc);
    const url = `http://127.0.0.1:${port}`;
    await waitHealthy(url, svc, 'the sources service', 30_000, 'its errors are above');
    const idle = memoryOf(svc.pid!);
    process.stdout.write(`[soak] service up (pid ${svc.pid}, RSS ${idle.rssMB} MB); creating the ${mode === 'url' ? 'URL' : 'uploaded'} source...\n`);

    let maxRss = 0;
    const accountId = newId('acct');
    const headers = () => ({ 'content-type': 'application/json', ...callerHeaders(accountId, { plan: 'enterprise' }) });
    const started = performance.now();
    let res: Response;
    if (mode === 'url') {
      res = await fetch(`${url}/v1/sources`, {
        method: 'POST',
        headers: headers(),
        body: JSON.stringify({ type: 'url', name: 'soak', url: `http://127.0.0.1:${filesPort}/orders.csv` }),
      });
    } else {
      process.stdout.write(`[soak] uploading a ${targetMiB} MiB CSV (${rows.toLocaleString('en')} rows), generated as it is sent...\n`);
      const encoder = new TextEncoder();
      const chunks = ordersCsvChunks(rows);
      let sent = 0;
      const body = new ReadableStream<Uint8Array>({
        pull(c) {
          const next = chunks.next();
          if (next.done) return c.close();
          const b = encoder.encode(next.value);
          bytes += b.length;
          c.enqueue(b);
          if (++sent % 64 === 0) maxRss = Math.max(maxRss, memoryOf(svc.pid!).rssMB);
        },
      });
      res = await fetch(`${url}/v1/sources/upload?name=soak`, { method: 'POST', headers: { ...headers(), 'content-type': 'text/csv' }, body, duplex: 'half' } as RequestInit);
      process.stdout.write(`[soak] ${((performance.now() - started) / 1000).toFixed(1)} s: uploaded (${res.status})\n`);
    }
    if (res.status !== 201) throw new Error(`create answered ${res.status}: ${await res.text()}`);
    const { id } = (await res.json()) as { id: string };
    let last = '';
    for (;;) {
      maxRss = Math.max(maxRss, memoryOf(svc.pid!).rssMB);
      const s = (await (await fetch(`${url}/v1/sources/${id}`, { headers: headers() })).json()) as { status: string; rowCount: number; error: string | null };
      if (s.status !== last) process.stdout.write(`[soak] ${((performance.now() - started) / 1000).toFixed(1)} s: ${(last = s.status)}\n`);
      if (s.status === 'failed') throw new Error(`the source failed: ${s.error}`);
      if (s.status === 'ready') {
        const seconds = (performance.now() - started) / 1000;
        const { peakMB } = memoryOf(svc.pid!);
        process.stdout.write(
          `[soak] ready: ${s.rowCount.toLocaleString('en')} rows from ${(bytes / 1024 ** 2).toFixed(0)} MiB in ${seconds.toFixed(1)} s ` +
            `(${Math.round(s.rowCount / seconds).toLocaleString('en')} rows/s); service RSS idle ${idle.rssMB} MB, sampled max ${maxRss} MB, kernel peak (VmHWM) ${peakMB} MB, budget ${budgetMB} MB\n`,
        );
        // One line for other tools (the bench's growth scenario) to read.
        process.stdout.write(`[soak] result ${JSON.stringify({ rows: s.rowCount, mib: Math.round(bytes / 1024 ** 2), seconds, idleMB: idle.rssMB, peakMB })}\n`);
        if (s.rowCount !== rows) throw new Error(`loaded ${s.rowCount} rows, expected ${rows}`);
        if (peakMB >= budgetMB) {
          process.stdout.write(`[soak] FAILED: peak RSS ${peakMB} MB is over the ${budgetMB} MB budget\n`);
          return 1;
        }
        process.stdout.write('[soak] OK\n');
        return 0;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    for (const c of children.reverse()) {
      if (c.exitCode === null) {
        c.kill('SIGTERM');
        await Promise.race([once(c, 'exit'), new Promise((r) => setTimeout(r, 10_000))]);
      }
    }
    await rm(dir, { recursive: true, force: true });
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`[soak] FAILED: ${(err as Error).message}\n`);
    process.exit(1);
  },
);
