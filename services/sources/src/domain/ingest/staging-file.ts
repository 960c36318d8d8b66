import { once } from 'node:events';
import { createWriteStream, type WriteStream } from 'node:fs';
import { mkdir, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import type { DatasetStore, StagedFormat } from '@dap/datasets';
import { TooLargeError } from '../connectors/remote-errors.ts';

const FLUSH_CHARS = 256 * 1024;

/** A temporary file beside the source's staging file; renaming it into place means a reader never sees half a pull. */
export async function stagingTemp(store: DatasetStore, accountId: string, sourceId: string): Promise<string> {
  const dir = store.dir(accountId, sourceId);
  await mkdir(dir, { recursive: true });
  return join(dir, `staging.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
}

/**
 * Streams text into a staging file with backpressure: writes are batched, and a full write buffer makes the
 * producer wait for 'drain' (so a fast database cursor never outruns the disk), and the byte count is capped.
 */
export class StagingWriter {
  readonly path: string;
  private readonly tmp: string;
  private readonly out: WriteStream;
  private readonly maxBytes: number;
  private pending: string[] = [];
  private pendingChars = 0;
  private bytes = 0;
  private failed: Error | null = null;

  private constructor(path: string, tmp: string, maxBytes: number) {
    this.path = path;
    this.tmp = tmp;
    this.maxBytes = maxBytes;
    this.out = createWriteStream(tmp, { highWaterMark: 1024 * 1024 });
    this.out.on('error', (err) => (this.failed = err));
  }

  static async open(store: DatasetStore, accountId: string, sourceId: string, format: StagedFormat, maxBytes: number): Promise<StagingWriter> {
    return new StagingWriter(store.stagingFile(accountId, sourceId, format), await stagingTemp(store, accountId, sourceId), maxBytes);
  }

  /** Appends text; resolves at once unless the batch is full and the disk is behind. */
  async write(text: string): Promise<void> {
    this.pending.push(text);
    this.pendingChars += text.length;
    if (this.pendingChars >= FLUSH_CHARS) await this.flush();
  }

  private async flush(): Promise<void> {
    if (this.failed) throw this.failed;
    if (!this.pending.length) return;
    const chunk = this.pending.join('');
    this.pending = [];
    this.pendingChars = 0;
    this.bytes += Buffer.byteLength(chunk);
    if (this.bytes > this.maxBytes) throw new TooLargeError(this.maxBytes);
    if (!this.out.write(chunk)) await Promise.race([once(this.out, 'drain'), once(this.out, 'error').then(([e]) => Promise.reject(e))]);
  }

  /** Flushes, closes and renames the file into place; answers its size in bytes. */
  async commit(): Promise<number> {
    await this.flush();
    this.out.end();
    await once(this.out, 'finish');
    if (this.failed) throw this.failed;
    await rename(this.tmp, this.path);
    return this.bytes;
  }

  async abort(): Promise<void> {
    this.out.destroy();
    await rm(this.tmp, { force: true });
  }
}
