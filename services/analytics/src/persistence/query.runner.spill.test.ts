import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { QueryRunner } from './query.runner.ts';

/** A sort of ~128 MB of strings under a 64 MB limit: it finishes only by spilling. */
const SPILLING = 'SELECT count(*) AS n FROM (SELECT h FROM (SELECT repeat(md5(i::VARCHAR), 8) AS h FROM range(500000) t(i)) ORDER BY h LIMIT 400000)';

/** The most files seen in `dir` while `work` runs (DuckDB works on its own threads; this loop stays free). */
async function filesDuring<T>(dir: string, work: Promise<T>): Promise<{ value: T; files: number }> {
  let files = 0;
  const poll = setInterval(() => {
    readdir(dir).then(
      (f) => (files = Math.max(files, f.length)),
      () => undefined,
    );
  }, 2);
  try {
    return { value: await work, files };
  } finally {
    clearInterval(poll);
  }
}

describe('QueryRunner spilling', () => {
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'analytics-spill-'));
    await mkdir(join(dir, 'datasets'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('spills into a directory of its own under DUCKDB_TEMP_DIR, not the working directory, and removes it on close', async () => {
    const base = join(dir, 'spill');
    const runner = await QueryRunner.open({ datasetDir: join(dir, 'datasets'), memoryLimit: '64MB', threads: 1, tempDirectory: base, maxTempSize: '2GB' });
    const own = runner.tempDirectory!;
    try {
      expect(own.startsWith(join(base, 'duckdb-'))).toBe(true);
      const settings = await runner.run(`SELECT current_setting('temp_directory') AS t, current_setting('max_temp_directory_size') AS m`, [], { timeoutMs: 5_000 });
      expect(settings.rows).toEqual([[own, expect.stringMatching(/^1\.8 GiB|^2\.0 GiB|^1\.9 GiB/)]]);
      const { value, files } = await filesDuring(own, runner.run(SPILLING, [], { timeoutMs: 120_000 }));
      expect(value.rows).toEqual([[400_000]]);
      expect(files).toBeGreaterThan(0); // it did spill, there
    } finally {
      runner.close();
    }
    expect(existsSync(own)).toBe(false);
  });
});
