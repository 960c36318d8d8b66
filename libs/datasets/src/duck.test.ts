import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { threadId } from 'node:worker_threads';
import { join } from 'node:path';
import { Duck, ownTempDir, releaseTempDir, sqlLiteral } from './duck.ts';

/** Runs for minutes unless interrupted. */
const ENDLESS = 'SELECT count(*) FROM range(10000000000) a, range(1000) b';

describe('Duck', () => {
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'duck-'));
    await mkdir(join(dir, 'allowed'));
    await writeFile(join(dir, 'allowed', 'in.csv'), 'a\n1\n');
    await writeFile(join(dir, 'outside.csv'), 'a\n2\n');
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('sets memory, threads and spilling on the instance, in a spill directory of its own removed on close', async () => {
    const duck = await Duck.open({ memoryLimit: '64MB', threads: 1, tempDirectory: join(dir, 'spill'), maxTempSize: '1GB' });
    const own = duck.tempDirectory!;
    try {
      const r = await duck.run(
        "SELECT current_setting('memory_limit') AS m, current_setting('threads') AS t, current_setting('temp_directory') AS d, current_setting('max_temp_directory_size') AS s",
      );
      expect(r.rows).toEqual([{ m: expect.stringMatching(/^6[0-4]\.\d MiB$/), t: 1, d: own, s: expect.stringMatching(/^(953\.6 MiB|1\.0 GiB|1000\.0 MB)$/) }]);
      expect(own.startsWith(join(dir, 'spill', 'duckdb-'))).toBe(true);
    } finally {
      duck.close();
    }
    expect(existsSync(own)).toBe(false);
  });

  it('sandboxed, reads only the allowed directories and the sandbox cannot be undone; unsandboxed, reads anywhere', async () => {
    const open = await Duck.open();
    try {
      // Positive control: the file outside is readable to an instance without a sandbox.
      expect((await open.run(`SELECT a FROM read_csv(${sqlLiteral(join(dir, 'outside.csv'))})`)).rows).toEqual([{ a: 2 }]);
    } finally {
      open.close();
    }
    const duck = await Duck.open({ allowedDirectories: [join(dir, 'allowed')], parquetMetadataCache: true });
    try {
      expect((await duck.run(`SELECT a FROM read_csv(${sqlLiteral(join(dir, 'allowed', 'in.csv'))})`)).rows).toEqual([{ a: 1 }]);
      await expect(duck.run(`SELECT a FROM read_csv(${sqlLiteral(join(dir, 'outside.csv'))})`)).rejects.toThrow(/Permission Error/);
      await expect(duck.run('SET enable_external_access = true')).rejects.toThrow(/locked/);
      expect((await duck.run("SELECT current_setting('parquet_metadata_cache') AS c")).rows).toEqual([{ c: true }]);
    } finally {
      duck.close();
    }
  });

  it('interrupts a statement when its signal aborts, and the connection can be leased for several statements', async () => {
    const duck = await Duck.open({ threads: 1 });
    try {
      const ctl = new AbortController();
      const started = Date.now();
      setTimeout(() => ctl.abort(), 100);
      await expect(duck.run(ENDLESS, [], { signal: ctl.signal })).rejects.toThrow(/INTERRUPT/i);
      expect(Date.now() - started).toBeLessThan(5_000);
      // An already aborted signal runs nothing.
      await expect(duck.connect(ctl.signal)).rejects.toThrow(/abort/i);
      const { conn, release } = await duck.connect();
      try {
        await conn.run('CREATE TEMP TABLE t AS SELECT 41 AS x');
        expect((await conn.runAndReadAll('SELECT x + 1 AS y FROM t')).getRowObjectsJson()).toEqual([{ y: 42 }]);
      } finally {
        release();
      }
    } finally {
      duck.close();
    }
  });

  it('stops the statements still running when it closes', async () => {
    // It would otherwise hang in closing, waiting for the statement, and the test would time out.
    const duck = await Duck.open({ threads: 1 });
    const { conn } = await duck.connect();
    setTimeout(() => duck.close(), 100);
    await expect(conn.run(ENDLESS)).rejects.toThrow(/INTERRUPT/i);
  });

  it("clears this host's spill directories of processes that are gone, and keeps live ones and other hosts'", async () => {
    const base = join(dir, 'shared');
    const host = hostname().replace(/[^A-Za-z0-9.]/g, '_');
    const keep = [`duckdb-${host}-${process.ppid}-0-alive1`, 'duckdb-other.host-999999999-0-other', 'unrelated'];
    for (const d of [...keep, `duckdb-${host}-999999999-0-dead01`, `duckdb-${host}-${process.pid}-${threadId}-mine01`]) await mkdir(join(base, d), { recursive: true });
    const mine = await ownTempDir(base);
    expect((await readdir(base)).sort()).toEqual([...keep, mine.slice(base.length + 1)].sort());
    releaseTempDir(mine);
    expect(existsSync(mine)).toBe(false);
  });
});
