import { createWriteStream } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import type { IncomingHttpHeaders } from 'node:http';
import { Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { z } from 'zod';
import { FILE_FORMATS, type FileFormat, type SourceConfigDto } from '@dap/contracts';
import type { StagedFormat } from '@dap/datasets';
import { stagingTemp } from '../ingest/staging-file.ts';
import { httpGet, UnsupportedEncodingError, type HttpGetResponse } from '../outbound/http-get.ts';
import { ConnectorCheckError, type RemoteConnector, type RemoteContext } from './connector.ts';
import { checkCsv, scanCsv } from './csv.connector.ts';
import { rowsFromJson } from './json.connector.ts';
import { describeNetworkError, formatBytes, TooLargeError } from './remote-errors.ts';
import { toRow } from './rows.ts';
import { withDeadline } from './deadline.ts';

export interface UrlSpec {
  url: string;
  format?: FileFormat;
  headers?: Record<string, string>;
}

const urlSpecSchema = z.object({
  url: z.string(),
  format: z.enum(FILE_FORMATS).optional(),
  headers: z.record(z.string(), z.string()).optional(),
});

/** The create-time check reads at most this much of the file. */
export const URL_PROBE_BYTES = 1024 * 1024;

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

/** The URL as the API shows it: a query string may carry a token, so only its presence is shown. */
export function redactUrl(url: string): string {
  const u = new URL(url);
  const base = `${u.protocol}//${u.host}${u.pathname}`;
  return u.search ? `${base}?[redacted]` : base;
}

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
  const text = head.toString('utf8').replace(/^\uFEFF/, '').trimStart();
  if (text.startsWith('[')) return 'json';
  if (text.startsWith('{')) return 'ndjson';
  return 'csv';
}

function refuseBinary(head: Buffer): void {
  if (head.includes(0)) throw new ConnectorCheckError('url', 'the file contains NUL bytes; it looks like a binary file, not CSV, JSON or NDJSON');
}

/** Counts the decoded bytes against the cap and keeps the first ones for the format and binary checks. */
class Meter extends Transform {
  bytes = 0;
  head = Buffer.alloc(0);
  private readonly maxBytes: number;

  constructor(maxBytes: number) {
    super();
    this.maxBytes = maxBytes;
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    this.bytes += chunk.length;
    if (this.bytes > this.maxBytes) return done(new TooLargeError(this.maxBytes));
    if (this.head.length < 64 * 1024) {
      this.head = Buffer.concat([this.head, chunk.subarray(0, 64 * 1024 - this.head.length)]);
      try {
        refuseBinary(this.head);
      } catch (err) {
        return done(err as Error);
      }
    }
    done(null, chunk);
  }
}

/** Turns what went wrong while fetching into the customer's reason. */
function urlFailure(err: unknown): Error {
  if (err instanceof ConnectorCheckError) return err;
  if (err instanceof UnsupportedEncodingError) return new ConnectorCheckError('url', err.message);
  const e = err as { code?: string };
  if (e?.code === 'Z_DATA_ERROR' || e?.code === 'Z_BUF_ERROR' || e?.code === 'ERR__ERROR_FORMAT_PADDING_1') return new ConnectorCheckError('url', 'the compressed response could not be decoded');
  const reason = describeNetworkError(err);
  if (reason) return new ConnectorCheckError('url', `could not download the file: ${reason}`);
  return err as Error;
}

async function get(spec: UrlSpec, ctx: RemoteContext, signal: AbortSignal): Promise<HttpGetResponse> {
  try {
    return await httpGet(spec.url, {
      guard: ctx.guard,
      headers: spec.headers ?? {},
      connectTimeoutMs: ctx.limits.connectTimeoutMs,
      idleTimeoutMs: ctx.limits.idleTimeoutMs,
      signal,
    });
  } catch (err) {
    throw urlFailure(err);
  }
}

/** Reads up to `limit` decoded bytes; `complete` tells whether that was the whole body. */
async function readPrefix(res: HttpGetResponse, limit: number): Promise<{ data: Buffer; complete: boolean }> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of res.body as AsyncIterable<Buffer>) {
      chunks.push(chunk);
      size += chunk.length;
      if (size >= limit) return { data: Buffer.concat(chunks).subarray(0, limit), complete: false };
    }
    return { data: Buffer.concat(chunks), complete: true };
  } finally {
    res.destroy();
  }
}

/** The create-time look at the file's start: it must parse as the format it claims. */
async function checkPrefix(format: FileFormat, data: Buffer, complete: boolean, ctx: RemoteContext): Promise<void> {
  if (data.length === 0 || !data.toString('utf8').trim()) throw new ConnectorCheckError('url', 'the file is empty');
  refuseBinary(data);
  let text = data.toString('utf8').replace(/^\uFEFF/, '');
  const reword = (err: unknown) => (err instanceof ConnectorCheckError ? new ConnectorCheckError('url', `the file is not valid ${format.toUpperCase()}: ${err.message}`) : err);
  try {
    if (format === 'csv') {
      if (!complete) text = text.slice(0, scanCsv(text, text.length - 1).probeEnd);
      await checkCsv(text, ctx);
    } else if (format === 'json') {
      if (complete) rowsFromJson(text);
      else if (!/^\s*\[\s*[{\]]/.test(text)) throw new ConnectorCheckError('url', 'the JSON must be an array of objects');
    } else {
      const lines = text.split(/\r?\n/);
      if (!complete) lines.pop(); // the last line may be cut in the middle
      let rows = 0;
      for (const [i, line] of lines.entries()) {
        if (!line.trim()) continue;
        let value: unknown;
        try {
          value = JSON.parse(line);
        } catch {
          throw new ConnectorCheckError('url', `line ${i + 1} is not valid JSON`);
        }
        toRow(value, 'url', `line ${i + 1}`);
        rows++;
      }
      if (!rows) throw new ConnectorCheckError('url', 'the NDJSON has no rows');
    }
  } catch (err) {
    throw reword(err);
  }
}

export const urlConnector: RemoteConnector<'url', UrlSpec> = {
  type: 'url',
  mode: 'remote',
  specOf: (body) => ({ url: body.url, ...(body.format ? { format: body.format } : {}), ...(body.headers ? { headers: body.headers } : {}) }),
  parseSpec: (value) => urlSpecSchema.parse(value),
  publicConfigOf: (spec): SourceConfigDto => ({
    url: redactUrl(spec.url),
    ...(spec.format ? { format: spec.format } : {}),
    ...(spec.headers ? { headers: Object.keys(spec.headers) } : {}),
  }),

  async check(spec, ctx) {
    await withDeadline(ctx.signal, ctx.limits.checkTimeoutMs, 'checking the URL', async (signal) => {
      const res = await get(spec, ctx, signal);
      let format: FileFormat | null;
      try {
        format = formatFromHeaders(spec, res.status, res.headers, ctx.limits.maxBytes);
      } catch (err) {
        res.destroy();
        throw err;
      }
      let prefix: { data: Buffer; complete: boolean };
      try {
        prefix = await readPrefix(res, URL_PROBE_BYTES);
      } catch (err) {
        throw urlFailure(err);
      }
      await checkPrefix(format ?? formatFromBytes(prefix.data), prefix.data, prefix.complete, ctx);
    });
  },

  async pull(spec, ctx) {
    return withDeadline(ctx.signal, ctx.limits.urlTimeoutMs, 'downloading the file', async (signal) => {
      const res = await get(spec, ctx, signal);
      let format: FileFormat | null;
      try {
        format = formatFromHeaders(spec, res.status, res.headers, ctx.limits.maxBytes);
      } catch (err) {
        res.destroy();
        throw err;
      }
      const tmp = await stagingTemp(ctx.store, ctx.accountId, ctx.sourceId);
      const meter = new Meter(ctx.limits.maxBytes);
      try {
        await pipeline(res.body, meter, createWriteStream(tmp, { highWaterMark: 1024 * 1024 }), { signal });
        if (meter.bytes === 0) throw new ConnectorCheckError('url', 'the file is empty');
        const staged: StagedFormat = format ?? formatFromBytes(meter.head);
        await rename(tmp, ctx.store.stagingFile(ctx.accountId, ctx.sourceId, staged));
        return { format: staged, checkFieldNames: staged !== 'csv' };
      } catch (err) {
        await rm(tmp, { force: true });
        throw err instanceof TooLargeError ? new ConnectorCheckError('url', err.message) : urlFailure(err);
      } finally {
        res.destroy();
      }
    });
  },
};
