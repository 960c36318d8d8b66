import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createWriteStream, existsSync } from 'node:fs';
import { chmod, mkdtemp, rm, stat } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { Writable } from 'node:stream';
import { DuckDBInstance } from '@duckdb/node-api';
import { newId } from '@dap/contracts';
import { createLogger } from '@dap/logger';
import { callerHeaders, stackEnv, TEST_INTERNAL_SECRET, uniqueSuffix } from '@dap/testing';
import { NGINX_BIN, startNginx } from '../../lib/nginx.ts';
import { freePort } from '../../../local/supervisor.ts';
import { loadSourcesConfig } from '../../../../services/sources/src/config.ts';
import { startSources } from '../../../../services/sources/src/index.ts';

export interface IngestBenchOptions {
  rows: number;
  /** Timed runs of each side (alternating); the median is reported. Default 3. */
  runs?: number;
  /** MongoDB and Kafka for the service; default: the test stack (`stack.sh up test`). */
  stack?: { MONGO_URL: string; KAFKA_BROKERS: string };
  /** Extra service configuration (e.g. DUCKDB_MEMORY_LIMIT). */
  env?: Record<string, string>;
  /**
   * How often the bench asks the service whether a sync has finished (default 50 ms). The figure does not
   * depend on it (see `serviceMs`), but every poll is a request and a MongoDB read competing with the sync
   * for the same cores, so a tight loop slows down what it measures.
   */
  pollMs?: number;
}

export interface IngestBenchResult {
  rows: number;
  fileBytes: number;
  /** What served the file (see startFileServer). */
  fileServer: 'nginx' | 'node';
  /**
   * The ingestion figure. One sync of a URL source on a local file server, from just before
   * `POST /v1/sources/{id}/sync` to the moment the new Parquet file is published: the service stamps
   * `lastSyncedAt` right after `DatasetStore.publish` swaps the `current` pointer, and the bench reads it
   * back (same machine, same clock). It covers the API call, the job queue, the lease, the HTTP download
   * streamed to disk, the CSV sniff, DuckDB's COPY into Parquet, normalization and the publish; it leaves
   * out only the final state write and event after the data is already live.
   */
  serviceRowsPerSec: number;
  /** POST /v1/sources until published: the same plus the create-time check (a probe GET and a CSV sniff). */
  createRowsPerSec: number;
  /** The sync's own pull + load time as the service logs it ('source synced'), without the API and lease around it. */
  pipelineRowsPerSec: number;
  pipelineRatio: number;
  /**
   * The load alone (sniff, checked COPY into Parquet, normalization, publish) against the baseline: what the
   * ratio would be if the file were already on the service's disk, as the baseline's is.
   */
  loadRatio: number;
  /**
   * The baseline: DuckDB's own `COPY (SELECT * FROM read_csv(file)) TO 'x.parquet' (FORMAT parquet,
   * COMPRESSION zstd)` on the same file (already in the page cache), in the bench process with DuckDB's
   * defaults (sniffing included): the load without the service, the download or the publish.
   */
  duckdbRowsPerSec: number;
  ratio: number;
  /**
   * The same COPY on the resources the service gives the load: its DUCKDB_MEMORY_LIMIT, and for a file over
   * INGEST_PARALLEL_MAX_BYTES its INGEST_LARGE_CSV_THREADS (one by default), so the report can tell what the
   * service does beyond DuckDB from what it does with less (`sameResourcesLoadRatio`: the load against this one).
   */
  duckdbSameResourcesRowsPerSec: number;
  sameResourcesLoadRatio: number;
  duckdbSameResourcesMs: number[];
  /** DuckDB `SELECT count(*) FROM read_csv(file)`: parsing only, no Parquet written (a stricter baseline). */
  duckdbCountRowsPerSec: number;
  serviceMs: number[];
  createMs: number[];
  pipelineMs: number[];
  /** The pipeline's two halves, from the same log line: the download to the staging file, and the load. */
  pullMs: number[];
  loadMs: number[];
  duckdbMs: number[];
  duckdbCountMs: number[];
  /**
   * CPU time (user + system, all threads) of the bench process during each timed sync and each DuckDB COPY:
   * less sensitive to a busy machine than wall time. The service and DuckDB run in this process; the file
   * server, MongoDB and Kafka do not, so `serviceCpuMs` leaves out the serving side of the download.
   */
  serviceCpuMs: number[];
  duckdbCpuMs: number[];
  /** The 1-minute load average before the first and after the last timed run. */
  loadAverage: [number, number];
}

const cpuMs = (u: NodeJS.CpuUsage) => Math.round((u.user + u.system) / 1000);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** A CSV like an orders export: integers, decimals, short strings, booleans, timestamps, quoted text. */
/** The bench's orders CSV, header first, as text pieces of ~64 KiB: written to a file, or streamed as a request body. */
export function* ordersCsvChunks(rows: number): Generator<string, void, undefined> {
  const countries = ['FR', 'DE', 'US', 'NO', 'BR'];
  let buf = 'id,amount,country,paid,at,qty,note\n';
  for (let i = 0; i < rows; i++) {
    buf += `${i},${((i % 1000) / 7).toFixed(4)},${countries[i % 5]},${i % 3 === 0},2024-01-${String(1 + (i % 28)).padStart(2, '0')} ${String(i % 24).padStart(2, '0')}:04:05,${i % 97},"note ${i}"\n`;
    if (buf.length > 1 << 16) {
      yield buf;
      buf = '';
    }
  }
  if (buf) yield buf;
}

export async function writeOrdersCsv(file: string, rows: number): Promise<number> {
  const out = createWriteStream(file, { highWaterMark: 1 << 20 });
  for (const chunk of ordersCsvChunks(rows)) if (!out.write(chunk)) await once(out, 'drain');
  out.end();
  await once(out, 'finish');
  return (await stat(file)).size;
}

interface FileServer {
  url: string;
  /** What serves the file: nginx when it is installed (`npm run bench` installs it), else a Node server. */
  kind: 'nginx' | 'node';
  stop(): Promise<void>;
}

/**
 * The file host, in its own process on the same two cores as the service. nginx serves it the way a
 * static host does (sendfile, no copy through user space); the Node server (a 1 MiB read stream piped
 * to the response) cost the client ~15 ms more per 123 MB download, and ran with more spread.
 */
async function startFileServer(file: string, dir: string): Promise<FileServer> {
  if (existsSync(NGINX_BIN)) {
    // nginx's workers run as another user (nobody), and mkdtemp made the directory private.
    await chmod(dir, 0o755);
    const nginx = await startNginx({ dir: join(dir, 'nginx'), port: await freePort(), site: { root: dirname(file) }, workers: 1, cpus: null });
    return { url: `${nginx.url}/${basename(file)}`, kind: 'nginx', stop: () => nginx.stop() };
  }
  const code = `
    const { createServer } = require('node:http');
    const { createReadStream, statSync } = require('node:fs');
    const file = process.argv[1];
    const srv = createServer((req, res) => {
      res.writeHead(200, { 'content-type': 'text/csv', 'content-length': statSync(file).size });
      createReadStream(file, { highWaterMark: 1 << 20 }).pipe(res);
    });
    srv.listen(0, '127.0.0.1', () => process.stdout.write(String(srv.address().port) + '\\n'));`;
  const child = spawn(process.execPath, ['-e', code, file], { stdio: ['ignore', 'pipe', 'inherit'] });
  const [chunk] = (await once(child.stdout!, 'data')) as [Buffer];
  return {
    url: `http://127.0.0.1:${chunk.toString().trim()}/${basename(file)}`,
    kind: 'node',
    stop: async () => {
      child.kill();
    },
  };
}

/**
 * CSV ingestion through the service (a URL source on a local file server, synced: API call, streamed
 * download, DuckDB load into Parquet, publish; see `serviceRowsPerSec`) against DuckDB reading the same file
 * itself into Parquet (`duckdbRowsPerSec`). Target (deploy/bench/README.md): ratio ≥ 0.8. Runs alternate between the two
 * sides and the medians are compared. The service runs in this process, with its download worker.
 */
export async function runIngestBench(opts: IngestBenchOptions): Promise<IngestBenchResult> {
  const runs = opts.runs ?? 3;
  const dir = await mkdtemp(join(tmpdir(), 'dap-ingest-bench-'));
  const file = join(dir, 'orders.csv');
  const fileBytes = await writeOrdersCsv(file, opts.rows);
  const server = await startFileServer(file, dir);
  const suffix = uniqueSuffix();
  const stack = opts.stack ?? stackEnv();
  const pollMs = opts.pollMs ?? 50;
  const synced: { pullMs: number; loadMs: number }[] = [];
  const syncLog = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString('utf8').split('\n')) {
        if (!line.includes('"source synced"')) continue;
        const { pullMs, loadMs } = JSON.parse(line) as { pullMs: number; loadMs: number };
        synced.push({ pullMs, loadMs });
      }
      done();
    },
  });
  // Nothing below may leave the file server running or the directory behind (the service may not start).
  const abandon = async (err: unknown): Promise<never> => {
    await server.stop();
    await rm(dir, { recursive: true, force: true });
    throw err;
  };
  const config = loadSourcesConfig({
    ...stack,
    MONGO_DB: `bench_src_${suffix}`,
    KAFKA_TOPIC_PREFIX: `bench${suffix}.`,
    INTERNAL_SECRET: TEST_INTERNAL_SECRET,
    HOST: '127.0.0.1',
    PORT: '0',
    LOG_LEVEL: 'warn',
    DATASET_DIR: join(dir, 'datasets'),
    SOURCE_CREDENTIALS_KEY: randomBytes(32).toString('base64'),
    ALLOW_PRIVATE_TARGETS: '127.0.0.0/8,::1/128',
    SYNC_SWEEP_MS: '60000',
    ...opts.env,
  });
  const svc = await startSources(config, { logger: createLogger({ name: 'sources-bench', level: 'info', destination: syncLog }) }).catch(abandon);
  const accountId = newId('acct');
  const headers = () => ({ 'content-type': 'application/json', ...callerHeaders(accountId, { plan: 'enterprise' }) });
  /** Waits until the source is ready with a sync newer than `after`; answers when it was published (epoch ms). */
  const untilReady = async (id: string, after: string | null): Promise<number> => {
    for (;;) {
      const s = (await (await fetch(`${svc.url}/v1/sources/${id}`, { headers: headers() })).json()) as {
        status: string;
        rowCount: number;
        error: string | null;
        lastSyncedAt: string | null;
      };
      if (s.status === 'ready' && s.lastSyncedAt && s.lastSyncedAt !== after) {
        if (s.rowCount !== opts.rows) throw new Error(`loaded ${s.rowCount} rows, expected ${opts.rows}`);
        return Date.parse(s.lastSyncedAt);
      }
      if (s.status === 'failed') throw new Error(`the source failed: ${s.error}`);
      await new Promise((r) => setTimeout(r, pollMs));
    }
  };
  /** Creates a source and waits until it is ready; answers its id and the time to its first published data. */
  const createOnce = async (): Promise<{ id: string; ms: number }> => {
    const t0 = Date.now();
    const res = await fetch(`${svc.url}/v1/sources`, { method: 'POST', headers: headers(), body: JSON.stringify({ type: 'url', name: 'bench', url: server.url }) });
    if (res.status !== 201) throw new Error(`create answered ${res.status}: ${await res.text()}`);
    const { id } = (await res.json()) as { id: string };
    return { id, ms: (await untilReady(id, null)) - t0 };
  };
  const syncOnce = async (id: string): Promise<number> => {
    const before = ((await (await fetch(`${svc.url}/v1/sources/${id}`, { headers: headers() })).json()) as { lastSyncedAt: string }).lastSyncedAt;
    const logged = synced.length;
    const cpu0 = process.cpuUsage();
    const t0 = Date.now();
    const res = await fetch(`${svc.url}/v1/sources/${id}/sync`, { method: 'POST', headers: headers() });
    if (res.status !== 202) throw new Error(`sync answered ${res.status}: ${await res.text()}`);
    const ms = (await untilReady(id, before)) - t0;
    result.serviceCpuMs.push(cpuMs(process.cpuUsage(cpu0)));
    for (let i = 0; i < 100 && synced.length === logged; i++) await new Promise((r) => setTimeout(r, 10)); // the 'source synced' line
    const line = synced.at(-1);
    result.pipelineMs.push(line ? line.pullMs + line.loadMs : Number.NaN);
    result.pullMs.push(line?.pullMs ?? Number.NaN);
    result.loadMs.push(line?.loadMs ?? Number.NaN);
    return ms;
  };
  const result: Pick<
    IngestBenchResult,
    'serviceMs' | 'createMs' | 'pipelineMs' | 'pullMs' | 'loadMs' | 'duckdbMs' | 'duckdbSameResourcesMs' | 'duckdbCountMs' | 'serviceCpuMs' | 'duckdbCpuMs'
  > = {
    serviceMs: [],
    createMs: [],
    pipelineMs: [],
    pullMs: [],
    loadMs: [],
    duckdbMs: [],
    duckdbSameResourcesMs: [],
    duckdbCountMs: [],
    serviceCpuMs: [],
    duckdbCpuMs: [],
  };
  const loadAverage: [number, number] = [0, 0];
  const duck = await DuckDBInstance.create(':memory:');
  const conn = await duck.connect();
  const duckOnce = async (sql: string): Promise<number> => {
    const t0 = performance.now();
    await conn.run(sql);
    return performance.now() - t0;
  };
  const lit = (s: string) => `'${s.replaceAll("'", "''")}'`;
  // A file up to INGEST_PARALLEL_MAX_BYTES loads on every thread, as DuckDB's default.
  const threads: Record<string, string> = fileBytes > config.INGEST_PARALLEL_MAX_BYTES ? { threads: String(config.INGEST_LARGE_CSV_THREADS) } : {};
  const small = await DuckDBInstance.create(':memory:', { memory_limit: config.DUCKDB_MEMORY_LIMIT, ...threads });
  const smallConn = await small.connect();
  try {
    // Warm-up (connections, page cache), and the source every timed sync pulls again.
    const { id } = await createOnce();
    await duckOnce(`SELECT count(*) FROM read_csv(${lit(file)})`);
    loadAverage[0] = loadavg()[0]!;
    for (let i = 0; i < runs; i++) {
      result.serviceMs.push(await syncOnce(id));
      result.createMs.push((await createOnce()).ms);
      const cpu0 = process.cpuUsage();
      result.duckdbMs.push(await duckOnce(`COPY (SELECT * FROM read_csv(${lit(file)})) TO ${lit(join(dir, `duck-${i}.parquet`))} (FORMAT parquet, COMPRESSION zstd)`));
      result.duckdbCpuMs.push(cpuMs(process.cpuUsage(cpu0)));
      result.duckdbCountMs.push(await duckOnce(`SELECT count(*) FROM read_csv(${lit(file)})`));
      const t0 = performance.now();
      await smallConn.run(`COPY (SELECT * FROM read_csv(${lit(file)})) TO ${lit(join(dir, `small-${i}.parquet`))} (FORMAT parquet, COMPRESSION zstd)`);
      result.duckdbSameResourcesMs.push(performance.now() - t0);
    }
    loadAverage[1] = loadavg()[0]!;
  } finally {
    conn.closeSync();
    duck.closeSync();
    smallConn.closeSync();
    small.closeSync();
    await svc.stop();
    await server.stop();
    await rm(dir, { recursive: true, force: true });
  }
  const rate = (ms: number[]) => Math.round(opts.rows / (median(ms) / 1000));
  const serviceRowsPerSec = rate(result.serviceMs);
  const duckdbRowsPerSec = rate(result.duckdbMs);
  return {
    rows: opts.rows,
    fileBytes,
    fileServer: server.kind,
    serviceRowsPerSec,
    createRowsPerSec: rate(result.createMs),
    pipelineRowsPerSec: rate(result.pipelineMs),
    pipelineRatio: Math.round((rate(result.pipelineMs) / duckdbRowsPerSec) * 100) / 100,
    loadRatio: Math.round((rate(result.loadMs) / duckdbRowsPerSec) * 100) / 100,
    duckdbRowsPerSec,
    ratio: Math.round((serviceRowsPerSec / duckdbRowsPerSec) * 100) / 100,
    duckdbCountRowsPerSec: rate(result.duckdbCountMs),
    duckdbSameResourcesRowsPerSec: rate(result.duckdbSameResourcesMs),
    sameResourcesLoadRatio: Math.round((rate(result.loadMs) / rate(result.duckdbSameResourcesMs)) * 100) / 100,
    duckdbSameResourcesMs: result.duckdbSameResourcesMs.map(Math.round),
    serviceMs: result.serviceMs.map(Math.round),
    createMs: result.createMs.map(Math.round),
    pipelineMs: result.pipelineMs,
    pullMs: result.pullMs,
    loadMs: result.loadMs,
    duckdbMs: result.duckdbMs.map(Math.round),
    duckdbCountMs: result.duckdbCountMs.map(Math.round),
    serviceCpuMs: result.serviceCpuMs,
    duckdbCpuMs: result.duckdbCpuMs,
    loadAverage: [Math.round(loadAverage[0] * 100) / 100, Math.round(loadAverage[1] * 100) / 100],
  };
}
