import { rename, rm } from 'node:fs/promises';
import { z } from 'zod';
import { FILE_FORMATS, type FileFormat, type SourceConfigDto } from '@dap/contracts';
import type { StagedFormat } from '@dap/datasets';
import { portOf } from '@dap/netguard';
import { stagingTemp } from '../ingest/staging-file.ts';
import { httpGet, type HttpGetResponse } from '../../workers/download/http-get.ts';
import { type RemoteConnector, type RemoteContext } from './connector.ts';
import { withDeadline } from './deadline.ts';
import { checkFileHead, FILE_PROBE_BYTES } from './file-check.ts';
import { downloadToFile, formatFromBytes, formatFromHeaders, urlFailure, type DownloadJob, type UrlSpec } from './url-download.ts';

export { formatFromBytes, formatFromHeaders, type UrlSpec } from './url-download.ts';

const urlSpecSchema = z.object({
  url: z.string(),
  format: z.enum(FILE_FORMATS).optional(),
  headers: z.record(z.string(), z.string()).optional(),
});

/** The create-time check reads at most this much of the file. */
export const URL_PROBE_BYTES = FILE_PROBE_BYTES;

/** The URL as the API shows it: a query string may carry a token, so only its presence is shown. */
export function redactUrl(url: string): string {
  const u = new URL(url);
  const base = `${u.protocol}//${u.host}${u.pathname}`;
  return u.search ? `${base}?[redacted]` : base;
}

async function get(spec: UrlSpec, ctx: RemoteContext, signal: AbortSignal): Promise<HttpGetResponse> {
  try {
    return await httpGet(spec.url, {
      dial: { guard: ctx.guard },
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
  const parts: Buffer[] = [];
  let size = 0;
  try {
    const { complete } = await res.readBody((chunks) => {
      for (const c of chunks) {
        // Copies: the chunks are only the sink's until it returns.
        parts.push(Buffer.from(c.subarray(0, limit - size)));
        size += parts.at(-1)!.length;
        if (size >= limit) return 'stop';
      }
    });
    return { data: Buffer.concat(parts, size), complete };
  } finally {
    res.destroy();
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
      await checkFileHead('url', format ?? formatFromBytes(prefix.data), prefix.data, prefix.complete, ctx);
    });
  },

  async pull(spec, ctx) {
    return withDeadline(ctx.signal, ctx.limits.urlTimeoutMs, 'downloading the file', async (signal) => {
      // The name is resolved and checked here, and the download dials exactly that address (in a worker
      // thread when the service has one: a big body's buffers then never touch the main heap).
      let address: { address: string; family: 4 | 6 };
      try {
        const u = new URL(spec.url);
        address = await ctx.guard.pin(u.hostname, portOf(u), ctx.limits.connectTimeoutMs);
      } catch (err) {
        throw urlFailure(err);
      }
      const tmp = await stagingTemp(ctx.store, ctx.accountId, ctx.sourceId);
      const job: DownloadJob = {
        spec,
        dial: { pinned: address },
        file: tmp,
        maxBytes: ctx.limits.maxBytes,
        connectTimeoutMs: ctx.limits.connectTimeoutMs,
        idleTimeoutMs: ctx.limits.idleTimeoutMs,
      };
      try {
        const got = ctx.downloads ? await ctx.downloads.run(job, signal) : await downloadToFile(job, signal);
        const staged: StagedFormat = got.format ?? formatFromBytes(got.head);
        await rename(tmp, ctx.store.stagingFile(ctx.accountId, ctx.sourceId, staged));
        return { format: staged, checkFieldNames: staged !== 'csv' };
      } catch (err) {
        await rm(tmp, { force: true });
        throw err;
      }
    });
  },
};
