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

/**
 * Parquet files per account and source. A sync writes a new file and then swaps a one-line `current`
 * pointer with an atomic rename, so a reader sees the old data or the new, never half a write.
 * Only the sources service writes here; analytics and models read through `currentFile`.
 */
export class DatasetStore {
  readonly root: string;
  readonly duck: Duck;

  constructor(root: string, duck: Duck) {
    this.root = root;
    this.duck = duck;
  }

  static async open(root: string, duckOptions: DuckOptions = {}): Promise<DatasetStore> {
    await mkdir(root, { recursive: true });
    return new DatasetStore(root, await Duck.open(duckOptions));
  }

  dir(accountId: string, sourceId: string): string {
    return join(this.root, checkSegment(accountId), checkSegment(sourceId));
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
   * atomic rename of the pointer, then removes the data files it replaced.
   */
  async publish(accountId: string, sourceId: string, file: string): Promise<IngestResult> {
    const dir = this.dir(accountId, sourceId);
    const fileName = basename(file);
    if (join(dir, fileName) !== file || !fileName.endsWith('.parquet')) throw new Error('publish takes a file from newDataFile');
    const [schema, count] = await Promise.all([this.describeFile(file), this.duck.run(`SELECT count(*) AS n FROM read_parquet(${sqlLiteral(file)})`)]);
    const pointerTmp = join(dir, `current.${process.pid}.tmp`);
    await writeFile(pointerTmp, fileName, { flush: true });
    await rename(pointerTmp, join(dir, 'current'));
    await this.removeStale(dir, fileName);
    return { rowCount: Number(count.rows[0]?.n ?? 0), schema, file };
  }

  async describeFile(file: string): Promise<DatasetColumn[]> {
    const res = await this.duck.run(`DESCRIBE SELECT * FROM read_parquet(${sqlLiteral(file)})`);
    return res.rows.map((r) => ({ name: String(r.column_name), type: apiTypeOf(String(r.column_type)) }));
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

  async remove(accountId: string, sourceId: string): Promise<void> {
    // A sync may still be writing into the folder; retrying rides out its last files landing.
    await rm(this.dir(accountId, sourceId), { recursive: true, force: true, maxRetries: 5, retryDelay: 50 });
  }

  private async removeStale(dir: string, keep: string): Promise<void> {
    for (const f of await readdir(dir)) {
      if (f.endsWith('.parquet') && f !== keep) await rm(join(dir, f), { force: true });
    }
  }
}
