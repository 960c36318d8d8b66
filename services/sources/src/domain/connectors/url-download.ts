import { closeSync, openSync, writeSync, writevSync } from 'node:fs';
import type { IncomingHttpHeaders } from 'node:http';
import type { FileFormat } from '@dap/contracts';
import { httpGet, UnsupportedEncodingError, type Dial } from '../../workers/download/http-get.ts';
import { ConnectorCheckError } from './connector.ts';
import { formatBytes, networkFailure, TooLargeError } from './remote-errors.ts';

/**
 * Downloading a URL source's file to disk. This module is what the download worker loads
 * (src/workers/download/download.worker.ts), so it imports nothing heavy: no DuckDB, no zod, types only from the
 * contracts.
 */

export interface UrlSpec {
  url: string;
  format?: FileFormat;
  headers?: Record<string, string>;
}

const CONTENT_TYPES: Record<string, FileFormat> = {
  'text/csv': 'csv',
  'application/csv': 'csv',
  'text/comma-separated-values': 'csv',
  'text/x-csv': 'csv',
  'application/json': 'json',
  'text/json': 'json',
  'application/x-ndjson': 'ndjson',
  'application/ndjson': 'ndjson',
  'application/jsonl': 'ndjson',
  'application/x-jsonlines': 'ndjson',
  'application/jsonlines': 'ndjson',
  'application/json-seq': 'ndjson',
};
/** Content types that say nothing about the format: the format comes from the request, the extension or the bytes. */
const GENERIC_TYPES = new Set(['', 'text/plain', 'application/octet-stream', 'binary/octet-stream', 'application/x-download', 'application/force-download']);

function extensionFormat(url: string): FileFormat | null {
  const path = new URL(url).pathname.toLowerCase();
  if (path.endsWith('.csv') || path.endsWith('.tsv')) return 'csv';
  if (path.endsWith('.ndjson') || path.endsWith('.jsonl')) return 'ndjson';
  if (path.endsWith('.json')) return 'json';
  return null;
}

/** What the response headers already tell: the format (or null: decide from the bytes) and the refusals. */
export function formatFromHeaders(spec: UrlSpec, status: number, headers: IncomingHttpHeaders, maxBytes: number): FileFormat | null {
  if (status >= 300 && status < 400) {
    throw new ConnectorCheckError('url', `the server answered ${status}, a redirect; redirects are not followed, so give the final URL`);
  }
  if (status < 200 || status >= 300) throw new ConnectorCheckError('url', `the server answered HTTP ${status}`);
  const length = headers['content-length'] === undefined ? null : Number(headers['content-length']);
  if (status === 204 || (length === 0 && !headers['content-encoding'])) throw new ConnectorCheckError('url', 'the file is empty');
  if (length !== null && length > maxBytes) {
    throw new ConnectorCheckError('url', `the file is ${formatBytes(length)}, larger than the limit of ${formatBytes(maxBytes)}`);
  }
  const type = (headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  const known = CONTENT_TYPES[type] ?? (type.endsWith('+json') ? 'json' : undefined);
  if (!known && !GENERIC_TYPES.has(type)) {
    throw new ConnectorCheckError('url', `the server answered with content type ${type.slice(0, 100)}; expected CSV, JSON or NDJSON`);
  }
  if (spec.format) {
    // A JSON content type also covers NDJSON served as application/json; CSV and JSON do not mix.
    if (known === 'csv' && spec.format !== 'csv') throw new ConnectorCheckError('url', `the server says the file is CSV, not ${spec.format}`);
    return spec.format;
  }
  return known ?? extensionFormat(spec.url);
}

/** The format of a file whose headers did not tell: JSON starts with `[`, NDJSON with `{`, anything else is CSV. */
export function formatFromBytes(head: Buffer): FileFormat {
  const text = head
    .toString('utf8')
    .replace(/^\uFEFF/, '')
    .trimStart();
  if (text.startsWith('[')) return 'json';
  if (text.startsWith('{')) return 'ndjson';
  return 'csv';
}

export function refuseBinary(head: Buffer, field: string): void {
  if (head.includes(0)) throw new ConnectorCheckError(field, 'the file contains NUL bytes; it looks like a binary file, not CSV, JSON or NDJSON');
}

const HEAD_BYTES = 64 * 1024;

/** How often, in decoded bytes, a download calls its `collect` hook (see `downloadToFile`). */
export const COLLECT_EVERY_BYTES = 4 * 1024 * 1024;

/** Turns what went wrong while fetching into the customer's reason. */
export function urlFailure(err: unknown): Error {
  if (err instanceof ConnectorCheckError) return err;
  if (err instanceof TooLargeError) return new ConnectorCheckError('url', err.message);
  if (err instanceof UnsupportedEncodingError) return new ConnectorCheckError('url', err.message);
  const e = err as { code?: string };
  // zlib's codes (Z_DATA_ERROR, Z_BUF_ERROR…) and brotli's (ERR__ERROR_FORMAT_PADDING_1, …_DISTANCE…).
  if (typeof e?.code === 'string' && /^(Z_|ERR__ERROR_)/.test(e.code)) return new ConnectorCheckError('url', 'the compressed response could not be decoded');
  const net = networkFailure(err, 'url', 'could not download the file');
  if (net) return net;
  return err as Error;
}

export interface DownloadJob {
  spec: UrlSpec;
  dial: Dial;
  /** Where the body goes; the caller renames it into place, or removes it on failure. */
  file: string;
  maxBytes: number;
  connectTimeoutMs: number;
  idleTimeoutMs: number;
}

export interface DownloadResult {
  /** From the headers, or null when only the bytes can tell (see `formatFromBytes`). */
  format: FileFormat | null;
  bytes: number;
  /** The first 64 KiB of the decoded body. */
  head: Buffer;
}

/**
 * GETs the file and writes its decoded body to `job.file` as it arrives, counting bytes against the cap and
 * checking the first ones for binary content. Each socket read is one synchronous write, made before the
 * next read: the service runs downloads in their own thread (DownloadWorker), where waiting for the disk
 * blocks nothing else. Writing asynchronously meant pausing the socket for each write, which cost more
 * than the writes (a 123 MB body on loopback: 200 ms and more instead of ~45 ms).
 * Every failure is a ConnectorCheckError with the customer's reason (see `urlFailure`), except a bug.
 * `collect` is called every COLLECT_EVERY_BYTES of body (the download worker collects its garbage there).
 */
export async function downloadToFile(job: DownloadJob, signal: AbortSignal, collect?: () => void): Promise<DownloadResult> {
  let res;
  try {
    res = await httpGet(job.spec.url, {
      dial: job.dial,
      headers: job.spec.headers ?? {},
      connectTimeoutMs: job.connectTimeoutMs,
      idleTimeoutMs: job.idleTimeoutMs,
      signal,
    });
  } catch (err) {
    throw urlFailure(err);
  }
  let fd: number | null = null;
  try {
    const format = formatFromHeaders(job.spec, res.status, res.headers, job.maxBytes);
    const file = (fd = openSync(job.file, 'w'));
    let bytes = 0;
    let head = Buffer.alloc(0);
    await res.readBody((chunks) => {
      let size = 0;
      for (const c of chunks) size += c.length;
      const before = bytes;
      bytes += size;
      if (bytes > job.maxBytes) throw new TooLargeError(job.maxBytes);
      if (head.length < HEAD_BYTES) {
        // A copy: the chunks are only the sink's until it returns.
        const parts = [head];
        let n = head.length;
        for (const c of chunks) {
          if (n >= HEAD_BYTES) break;
          parts.push(c.subarray(0, HEAD_BYTES - n));
          n += parts.at(-1)!.length;
        }
        head = Buffer.concat(parts, n);
        refuseBinary(head, 'url');
      }
      writeAll(file, chunks, size);
      if (collect && Math.floor(before / COLLECT_EVERY_BYTES) !== Math.floor(bytes / COLLECT_EVERY_BYTES)) collect();
    });
    if (bytes === 0) throw new ConnectorCheckError('url', 'the file is empty');
    return { format, bytes, head };
  } catch (err) {
    throw urlFailure(err);
  } finally {
    res.destroy();
    if (fd !== null) closeSync(fd);
  }
}

/** writev until every byte is written (a regular file takes them all at once, but the call does not promise it). */
function writeAll(fd: number, chunks: Buffer[], size: number): void {
  let written = writevSync(fd, chunks);
  if (written === size) return;
  for (const c of chunks) {
    if (written >= c.length) {
      written -= c.length;
      continue;
    }
    for (let at = written; at < c.length;) at += writeSync(fd, c, at);
    written = 0;
  }
}
