import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { DuckDBInstance } from '@duckdb/node-api';
import { newId, SCOPES, signCallerContext } from '@dap/contracts';
import { createLogger } from '@dap/logger';
import { stackEnv, TEST_INTERNAL_SECRET, uniqueSuffix } from '@dap/testing';
import { loadSourcesConfig } from '../src/config.ts';
import { startSources } from '../src/index.ts';

export interface IngestBenchOptions {
  rows: number;
  /** Timed runs of each side (alternating); the median is reported. Default 3. */
  runs?: number;
  /** MongoDB and Kafka for the service; default: the test stack (`stack.sh up test`). */
  stack?: { MONGO_URL: string; KAFKA_BROKERS: string };
  /** Extra service configuration (e.g. DUCKDB_MEMORY_LIMIT). */
  env?: Record<string, string>;
}

export interface IngestBenchResult {
  rows: number;
  fileBytes: number;
  /**
   * POST /v1/sources/{id}/sync of a URL source until it is ready again: download (streamed to disk), DuckDB
   * load into Parquet, publish, state change. This is the ingestion figure.
   */
  serviceRowsPerSec: number;
  /** POST /v1/sources until ready: the same plus the create-time check (a probe GET and a CSV sniff). */
  createRowsPerSec: number;
  /**
   * The sync's own pull + load time as the service logs it ('source synced': pullMs + loadMs), without the
   * API round trips and MongoDB state writes around it (which a busy shared MongoDB can stretch).
   */
  pipelineRowsPerSec: number;
  pipelineRatio: number;
  /** DuckDB's own `COPY (SELECT * FROM read_csv(file)) TO 'x.parquet'`: the same work minus the service. */
  duckdbRowsPerSec: number;
  ratio: number;
  /** DuckDB `SELECT count(*) FROM read_csv(file)`: parsing only, no Parquet written (a stricter baseline). */
  duckdbCountRowsPerSec: number;
  serviceMs: number[];
  createMs: number[];
  pipelineMs: number[];
  duckdbMs: number[];
  duckdbCountMs: number[];
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** A CSV like an orders export: integers, decimals, short strings, booleans, timestamps, quoted text. */
export async function writeOrdersCsv(file: string, rows: number): Promise<number> {
  const out = createWriteStream(file, { highWaterMark: 1 << 20 });
  const countries = ['FR', 'DE', 'US', 'NO', 'BR'];
  out.write('id,amount,country,paid,at,qty,note\n');
  let buf = '';
  for (let i = 0; i < rows; i++) {
    buf += `${i},${((i % 1000) / 7).toFixed(4)},${countries[i % 5]},${i % 3 === 0},2024-01-${String(1 + (i % 28)).padStart(2, '0')} ${String(i % 24).padStart(2, '0')}:04:05,${i % 97},"note ${i}"\n`;
    if (buf.length > 1 << 16) {
      if (!out.write(buf)) await once(out, 'drain');
      buf = '';
    }
  }
  out.end(buf);
  await once(out, 'finish');
  return (await stat(file)).size;
}

/** A static file server in its own process, so serving the file does not compete with the service's event loop. */
async function startFileServer(file: string): Promise<{ url: string; child: ChildProcess }> {
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
  return { url: `http://127.0.0.1:${chunk.toString().trim()}/orders.csv`, child };
}

/**
 * CSV ingestion through the service (a URL source on a local file server, synced: streamed download, DuckDB
 * load into Parquet, publish) against DuckDB reading the same file itself into Parquet. DESIGN §9 target:
 * ratio ≥ 0.7. Runs alternate between the two sides and the medians are compared.
 */
export async function runIngestBench(opts: IngestBenchOptions): Promise<IngestBenchResult> {
  const runs = opts.runs ?? 3;
  const dir = await mkdtemp(join(tmpdir(), 'dap-ingest-bench-'));
  const file = join(dir, 'orders.csv');
  const fileBytes = await writeOrdersCsv(file, opts.rows);
  const server = await startFileServer(file);
  const suffix = uniqueSuffix();
  const stack = opts.stack ?? stackEnv();
  const synced: number[] = [];
  const syncLog = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString('utf8').split('\n')) {
        if (!line.includes('"source synced"')) continue;
        const { pullMs, loadMs } = JSON.parse(line) as { pullMs: number; loadMs: number };
        synced.push(pullMs + loadMs);
      }
      done();
    },
  });
  const svc = await startSources(
    loadSourcesConfig({
      ...stack,
      MONGO_DB: `bench_src_${suffix}`,
      KAFKA_TOPIC_PREFIX: `bench${suffix}.`,
      INTERNAL_SECRET: TEST_INTERNAL_SECRET,
      HOST: '127.0.0.1',
      PORT: '0',
      LOG_LEVEL: 'warn',
      DATASET_DIR: join(dir, 'datasets'),
      SOURCE_CREDENTIALS_KEY: randomBytes(32).toString('base64'),
      ALLOW_PRIVATE_TARGETS: 'true',
      SYNC_SWEEP_MS: '60000',
      ...opts.env,
    }),
    { logger: createLogger({ name: 'sources-bench', level: 'info', destination: syncLog }) },
  );
  const accountId = newId('acct');
  const headers = () => {
    const { context, signature } = signCallerContext(TEST_INTERNAL_SECRET, { accountId, plan: 'enterprise', scopes: [...SCOPES], requestId: newId('req'), issuedAt: Date.now() });
    return { 'content-type': 'application/json', 'x-dap-context': context, 'x-dap-signature': signature };
  };
  const untilReady = async (id: string, after: string | null): Promise<void> => {
    for (;;) {
      const s = (await (await fetch(`${svc.url}/v1/sources/${id}`, { headers: headers() })).json()) as { status: string; rowCount: number; error: string | null; lastSyncedAt: string | null };
      if (s.status === 'ready' && s.lastSyncedAt !== after) {
        if (s.rowCount !== opts.rows) throw new Error(`loaded ${s.rowCount} rows, expected ${opts.rows}`);
        return;
      }
      if (s.status === 'failed') throw new Error(`the source failed: ${s.error}`);
      await new Promise((r) => setTimeout(r, 5));
    }
  };
  /** Creates a source and waits until it is ready; answers its id and the time taken. */
  const createOnce = async (): Promise<{ id: string; ms: number }> => {
    const t0 = performance.now();
    const res = await fetch(`${svc.url}/v1/sources`, { method: 'POST', headers: headers(), body: JSON.stringify({ type: 'url', name: 'bench', url: server.url }) });
    if (res.status !== 201) throw new Error(`create answered ${res.status}: ${await res.text()}`);
    const { id } = (await res.json()) as { id: string };
    await untilReady(id, null);
    return { id, ms: performance.now() - t0 };
  };
  const syncOnce = async (id: string): Promise<number> => {
    const before = ((await (await fetch(`${svc.url}/v1/sources/${id}`, { headers: headers() })).json()) as { lastSyncedAt: string }).lastSyncedAt;
    const t0 = performance.now();
    const res = await fetch(`${svc.url}/v1/sources/${id}/sync`, { method: 'POST', headers: headers() });
    if (res.status !== 202) throw new Error(`sync answered ${res.status}: ${await res.text()}`);
    await untilReady(id, before);
    const ms = performance.now() - t0;
    await new Promise((r) => setTimeout(r, 20)); // let the 'source synced' line reach the log
    result.pipelineMs.push(synced.at(-1) ?? Number.NaN);
    return ms;
  };
  const result: Pick<IngestBenchResult, 'serviceMs' | 'createMs' | 'pipelineMs' | 'duckdbMs' | 'duckdbCountMs'> = {
    serviceMs: [],
    createMs: [],
    pipelineMs: [],
    duckdbMs: [],
    duckdbCountMs: [],
  };
  const duck = await DuckDBInstance.create(':memory:');
  const conn = await duck.connect();
  const duckOnce = async (sql: string): Promise<number> => {
    const t0 = performance.now();
    await conn.run(sql);
    return performance.now() - t0;
  };
  const lit = (s: string) => `'${s.replaceAll("'", "''")}'`;
  try {
    // Warm-up (connections, page cache), and the source every timed sync pulls again.
    const { id } = await createOnce();
    await duckOnce(`SELECT count(*) FROM read_csv(${lit(file)})`);
    for (let i = 0; i < runs; i++) {
      result.serviceMs.push(await syncOnce(id));
      result.createMs.push((await createOnce()).ms);
      result.duckdbMs.push(await duckOnce(`COPY (SELECT * FROM read_csv(${lit(file)})) TO ${lit(join(dir, `duck-${i}.parquet`))} (FORMAT parquet, COMPRESSION zstd)`));
      result.duckdbCountMs.push(await duckOnce(`SELECT count(*) FROM read_csv(${lit(file)})`));
    }
  } finally {
    conn.closeSync();
    duck.closeSync();
    await svc.stop();
    server.child.kill();
    await rm(dir, { recursive: true, force: true });
  }
  const rate = (ms: number[]) => Math.round(opts.rows / (median(ms) / 1000));
  const serviceRowsPerSec = rate(result.serviceMs);
  const duckdbRowsPerSec = rate(result.duckdbMs);
  return {
    rows: opts.rows,
    fileBytes,
    serviceRowsPerSec,
    createRowsPerSec: rate(result.createMs),
    pipelineRowsPerSec: rate(result.pipelineMs),
    pipelineRatio: Math.round((rate(result.pipelineMs) / duckdbRowsPerSec) * 100) / 100,
    duckdbRowsPerSec,
    ratio: Math.round((serviceRowsPerSec / duckdbRowsPerSec) * 100) / 100,
    duckdbCountRowsPerSec: rate(result.duckdbCountMs),
    serviceMs: result.serviceMs.map(Math.round),
    createMs: result.createMs.map(Math.round),
    pipelineMs: result.pipelineMs,
    duckdbMs: result.duckdbMs.map(Math.round),
    duckdbCountMs: result.duckdbCountMs.map(Math.round),
  };
}
