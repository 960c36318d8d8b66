import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Duck, sqlLiteral } from '@dap/datasets';
import { QueryRunner } from './query.runner.ts';

/**
 * The runner keeps DuckDB's Parquet metadata cache on (footers parsed once per file). Every sync writes a new
 * file, so over time the cache meets thousands of files, most of them since replaced: it must stay within
 * the instance's memory limit (DuckDB ≥ 1.5 evicts it, least recently used first, under that limit; older
 * versions kept every entry, the "leak" of duckdb/duckdb#16842).
 */
const FILES = 300;
const COLUMNS = 60;
let dir: string;
const files: string[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'analytics-cache-'));
  await mkdir(join(dir, 'datasets'));
  const duck = await Duck.open();
  const select = Array.from({ length: COLUMNS }, (_, c) => `'v' || (i + ${c})::VARCHAR AS c${c}`).join(', ');
  for (let f = 0; f < FILES; f++) {
    const file = join(dir, 'datasets', `f${f}.parquet`);
    await duck.run(`COPY (SELECT ${select} FROM range(20) t(i)) TO ${sqlLiteral(file)} (FORMAT parquet)`);
    files.push(file);
  }
  duck.close();
}, 60_000);

afterAll(() => rm(dir, { recursive: true, force: true }));

async function cacheBytesAfterReadingEveryFile(memoryLimit: string): Promise<number> {
  const runner = await QueryRunner.open({ datasetDir: join(dir, 'datasets'), memoryLimit, threads: 1 });
  try {
    for (const file of files) await runner.run('SELECT count(*), max(c1) FROM read_parquet($1)', [file], { timeoutMs: 10_000 });
    const r = await runner.run("SELECT sum(memory_usage_bytes) FROM duckdb_memory() WHERE tag IN ('OBJECT_CACHE', 'EXTERNAL_FILE_CACHE')", [], { timeoutMs: 10_000 });
    return Number(r.rows[0]![0]);
  } finally {
    runner.close();
  }
}

it('caches Parquet metadata per file, but never past the memory limit', async () => {
  const unbounded = await cacheBytesAfterReadingEveryFile('512MB');
  // The files' metadata alone outgrows the small limit below: the cache is on and sizeable.
  expect(unbounded).toBeGreaterThan(12 * 1024 * 1024);
  const bounded = await cacheBytesAfterReadingEveryFile('8MB');
  expect(bounded).toBeGreaterThan(0);
  expect(bounded).toBeLessThanOrEqual(8 * 1024 * 1024);
}, 60_000);
