import { mkdir, readFile, rename, rm, writeFile, readdir } from 'node:fs/promises';
import { createWriteStream } from 'node:fs';
import { basename, join } from 'node:path';
import { once } from 'node:events';
import { newId } from '@dap/contracts';
import { Duck, apiTypeOf, sqlLiteral, type DuckOptions } from './duck.ts';

export interface DatasetColumn {
  name: string;
  type: 'string' | 'integer' | 'number' | 'boolean' | 'timestamp';
}

export interface IngestResult {
  rowCount: number;
  schema: DatasetColumn[];
  file: string;
}

/** How raw data waits for its load: CSV, NDJSON (one object per line) or JSON (one array of objects). */
export type StagedFormat = 'csv' | 'ndjson' | 'json';

const SAFE_SEGMENT = /^[a-z]+_[0-9A-Z]{26}$/;

function checkSegment(s: string): string {
  if (!SAFE_SEGMENT.test(s)) throw new Error(`unsafe dataset path segment: ${s}`);
  return s;
}

/** How long a replaced data file stays readable unless the writer says otherwise: longer than any query. */
export const DEFAULT_DATASET_GRACE_MS = 10 * 60_000;
/** Beside a replaced data file, holding when it was replaced (ms since the epoch). */
const RETIRED = '.retired';

export interface StoreOptions {
  /**
   * How long a data file stays on disk after a newer one replaced it. Readers on other nodes (analytics,
   * models) may have resolved the old file just before the swap and still be reading it.
   */
  graceMs?: number;
  /** The clock retirement is measured on (ms since the epoch); tests inject one. */
  now?: () => number;
}

/**
 * Where a source's current data is: the read side of the store, with no DuckDB (analytics and models only
 * resolve files here; they read them with their own query runner and training workers).
 */
export class DatasetFiles {
  readonly root: string;

  constructor(root: string) {
    this.root = root;
  }

  dir(accountId: string, sourceId: string): string {
    return join(this.root, checkSegment(accountId), checkSegment(sourceId));
  }

  /** The Parquet file holding a source's current data, or null when it has none yet. */
  async currentFile(accountId: string, sourceId: string): Promise<string | null> {
    const dir = this.dir(accountId, sourceId);
    try {
      return join(dir, (await readFile(join(dir, 'current'), 'utf8')).trim());
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    }
  }
}

/**
 * Parquet files per account and source. A sync writes a new file and then swaps a one-line `current`
 * pointer with an atomic rename, so a reader sees the old data or the new, never half a write. The replaced
 * file is retired, not removed: it is deleted only `graceMs` later, so a query that resolved it just before the
 * swap (on this node or another one sharing the volume) still finds it.
 * Only the sources service writes here; analytics and models read through `currentFile`.
 */
export class DatasetStore extends DatasetFiles {
  readonly duck: Duck;
  readonly graceMs: number;
  private readonly now: () => number;

  constructor(root: string, duck: Duck, opts: StoreOptions = {}) {
    super(root);
    this.duck = duck;
    this.graceMs = opts.graceMs ?? DEFAULT_DATASET_GRACE_MS;
    this.now = opts.now ?? Date.now;
  }

  static async open(root: string, duckOptions: DuckOptions = {}, storeOptions: StoreOptions = {}): Promise<DatasetStore> {
    await mkdir(root, { recursive: true });
    return new DatasetStore(root, await Duck.open(duckOptions), storeOptions);
  }

  stagingFile(accountId: string, sourceId: string, format: StagedFormat): string {
    return join(this.dir(accountId, sourceId), `staging.${format}`);
  }

  /** Writes the raw upload durably before the API answers, so a crash before the sync loses nothing. */
  async stage(accountId: string, sourceId: string, format: StagedFormat, content: string | Iterable<string>): Promise<string> {
    const dir = this.dir(accountId, sourceId);
    await mkdir(dir, { recursive: true });
    const file = this.stagingFile(accountId, sourceId, format);
    const tmp = `${file}.${process.pid}.tmp`;
    if (typeof content === 'string') {
      await writeFile(tmp, content, { flush: true });
    } else {
      const out = createWriteStream(tmp);
      for (const chunk of content) if (!out.write(chunk)) await once(out, 'drain');
      out.end();
      await once(out, 'finish');
    }
    await rename(tmp, file);
    return file;
  }

  /** Converts a staged file to Parquet, then publishes it as the source's current data. */
  async ingest(accountId: string, sourceId: string, format: StagedFormat): Promise<IngestResult> {
    const staged = this.stagingFile(accountId, sourceId, format);
    const reader =
      format === 'csv'
        ? `read_csv(${sqlLiteral(staged)}, header = true, auto_detect = true, sample_size = -1)`
        : `read_json_auto(${sqlLiteral(staged)}, format = ${sqlLiteral(format === 'json' ? 'array' : 'newline_delimited')}, sample_size = -1)`;
    const target = this.newDataFile(accountId, sourceId);
    await this.duck.run(`COPY (SELECT * FROM ${reader}) TO ${sqlLiteral(target)} (FORMAT parquet, COMPRESSION zstd)`);
    return this.publish(accountId, sourceId, target);
  }

  /** A fresh path for a Parquet file in the source's directory; nobody reads it until `publish`. */
  newDataFile(accountId: string, sourceId: string): string {
    return join(this.dir(accountId, sourceId), `${newId('msg').slice(4)}.parquet`);
  }

  /**
   * Makes a Parquet file written into the source's directory (see `newDataFile`) its current data, with one
   * atomic rename of the pointer. The files it replaced are retired (removed after the grace period).
   */
  async publish(accountId: string, sourceId: string, file: string): Promise<IngestResult> {
    const dir = this.dir(accountId, sourceId);
    const fileName = basename(file);
    if (join(dir, fileName) !== file || !fileName.endsWith('.parquet')) throw new Error('publish takes a file from newDataFile');
    const [schema, count] = await Promise.all([this.describeFile(file), this.duck.run(`SELECT count(*) AS n FROM read_parquet(${sqlLiteral(file)})`)]);
    // A file some other writer retired (one whose lease ran out mid-load) is current again from here on.
    await rm(join(dir, fileName + RETIRED), { force: true });
    const pointerTmp = join(dir, `current.${process.pid}.tmp`);
    await writeFile(pointerTmp, fileName, { flush: true });
    await rename(pointerTmp, join(dir, 'current'));
    await this.retireAllBut(dir, fileName);
    await this.sweepDir(dir);
    return { rowCount: Number(count.rows[0]?.n ?? 0), schema, file };
  }

  /**
   * Removes the Parquet files a failed sync left beside the published one. Retired files are not the
   * sync's: readers may still be on them until their grace period ends.
   */
  async removeUnpublished(accountId: string, sourceId: string): Promise<void> {
    const dir = this.dir(accountId, sourceId);
    const current = await this.currentFile(accountId, sourceId);
    const keep = current ? basename(current) : null;
    let names: string[];
    try {
      names = await readdir(dir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw err;
    }
    const retired = new Set(names.filter((f) => f.endsWith(RETIRED)).map((f) => f.slice(0, -RETIRED.length)));
    for (const f of names) if (f.endsWith('.parquet') && f !== keep && !retired.has(f)) await rm(join(dir, f), { force: true });
  }

  /**
   * Deletes every retired file whose grace period is over, in every source's directory; returns how many.
   * The sources service runs it on a timer, since a source that is never synced again never publishes again.
   */
  async sweepRetired(): Promise<number> {
    let removed = 0;
    for (const account of await readdirOrEmpty(this.root)) {
      if (!SAFE_SEGMENT.test(account)) continue;
      for (const source of await readdirOrEmpty(join(this.root, account))) {
        if (SAFE_SEGMENT.test(source)) removed += await this.sweepDir(join(this.root, account, source));
      }
    }
    return removed;
  }

  /** Marks every data file but `keep` retired as of now (a file already marked keeps its first time). */
  private async retireAllBut(dir: string, keep: string): Promise<void> {
    const names = await readdir(dir);
    const marked = new Set(names.filter((f) => f.endsWith(RETIRED)));
    const at = String(this.now());
    for (const f of names) {
      if (f.endsWith('.parquet') && f !== keep && !marked.has(f + RETIRED)) await writeFile(join(dir, f + RETIRED), at);
    }
  }

  private async sweepDir(dir: string): Promise<number> {
    let removed = 0;
    const now = this.now();
    const current = await readFile(join(dir, 'current'), 'utf8').then(
      (name) => name.trim(),
      () => null,
    );
    for (const marker of await readdirOrEmpty(dir)) {
      if (!marker.endsWith(RETIRED)) continue;
      if (marker.slice(0, -RETIRED.length) === current) {
        await rm(join(dir, marker), { force: true }); // never the file readers are sent to
        continue;
      }
      const at = Number(await readFile(join(dir, marker), 'utf8').catch(() => 'NaN'));
      // An unreadable marker (a crash mid-write) counts from now on: removed one grace period later at most.
      if (Number.isFinite(at) && now - at < this.graceMs) continue;
      if (!Number.isFinite(at)) {
        await writeFile(join(dir, marker), String(now));
        continue;
      }
      await rm(join(dir, marker.slice(0, -RETIRED.length)), { force: true });
      await rm(join(dir, marker), { force: true });
      removed++;
    }
    return removed;
  }

  async describeFile(file: string): Promise<DatasetColumn[]> {
    const res = await this.duck.run(`DESCRIBE SELECT * FROM read_parquet(${sqlLiteral(file)})`);
    return res.rows.map((r) => ({ name: String(r.column_name), type: apiTypeOf(String(r.column_type)) }));
  }

  async remove(accountId: string, sourceId: string): Promise<void> {
    // A sync may still be writing into the folder; retrying rides out its last files landing.
    await rm(this.dir(accountId, sourceId), { recursive: true, force: true, maxRetries: 5, retryDelay: 50 });
  }
}

async function readdirOrEmpty(dir: string): Promise<string[]> {
  try {
    return await readdir(dir);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return [];
    throw err;
  }
}
