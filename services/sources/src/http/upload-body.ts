import { createWriteStream } from 'node:fs';
import { extname } from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { Busboy, type BusboyInstance } from '@fastify/busboy';
import type { Request } from 'express';
import { UPLOAD_FILE_FIELD, UPLOAD_FORMAT_OF_MEDIA_TYPE, UPLOAD_MEDIA_TYPES, type FileFormat } from '@dap/contracts';
import { uploadMalformed, uploadTooLarge, uploadUnsupported } from '../domain/errors.ts';

/** What the request's headers say about its body, read before a byte of it is. */
export type UploadMedia = { kind: 'raw'; format: FileFormat } | { kind: 'multipart' };

export interface UploadLimits {
  /** UPLOAD_LIMIT_BYTES: the file's size at most. */
  maxBytes: number;
  /** A body that sends nothing for this long is cut. */
  idleTimeoutMs: number;
}

export interface ReceivedUpload {
  bytes: number;
  /** The format the body names: its media type, or the multipart file part's type or file name; null when none does. */
  format: FileFormat | null;
  /** Multipart text fields (`name`, `format`). */
  fields: Record<string, string>;
}

const FORMAT_OF_EXTENSION: Readonly<Record<string, FileFormat>> = { '.csv': 'csv', '.json': 'json', '.ndjson': 'ndjson', '.jsonl': 'ndjson' };
const FORM_FIELDS = new Set(['name', 'format']);
const UTF8 = new Set(['utf-8', 'utf8', 'us-ascii']);

function mediaTypeOf(header: string | undefined): { type: string; params: Map<string, string> } {
  const [type = '', ...rest] = (header ?? '').split(';');
  const params = new Map<string, string>();
  for (const p of rest) {
    const eq = p.indexOf('=');
    if (eq > 0)
      params.set(
        p.slice(0, eq).trim().toLowerCase(),
        p
          .slice(eq + 1)
          .trim()
          .replace(/^"(.*)"$/, '$1'),
      );
  }
  return { type: type.trim().toLowerCase(), params };
}

/**
 * Checks the headers of an upload before its body is read: a media type we take (415), no content coding
 * (415: a compressed body would be stored compressed), UTF-8 text, and a declared length within the limit (413).
 */
export function uploadMediaOf(req: Request, limits: UploadLimits): UploadMedia {
  const encoding = (req.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
  if (encoding !== 'identity') throw uploadUnsupported(`Content-Encoding ${encoding} is not supported on uploads; send the file uncompressed`);
  const { type, params } = mediaTypeOf(req.headers['content-type']);
  const charset = params.get('charset');
  if (charset && !UTF8.has(charset.toLowerCase())) throw uploadUnsupported(`the file must be UTF-8, not ${charset}`);
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > limits.maxBytes) throw uploadTooLarge(limits.maxBytes);
  if (type === 'multipart/form-data') return { kind: 'multipart' };
  const format = UPLOAD_FORMAT_OF_MEDIA_TYPE[type];
  if (!format) throw uploadUnsupported(`${type ? `Content-Type ${type} is not supported` : 'the upload has no Content-Type'}; send one of ${UPLOAD_MEDIA_TYPES.join(', ')}`);
  return { kind: 'raw', format };
}

/** Counts the bytes going to disk and fails the stream past the limit. */
function meter(maxBytes: number, count: { bytes: number }): Transform {
  return new Transform({
    transform(chunk: Buffer, _enc, done) {
      count.bytes += chunk.length;
      if (count.bytes > maxBytes) done(uploadTooLarge(maxBytes));
      else done(null, chunk);
    },
  });
}

const toDisk = (file: string) => createWriteStream(file, { highWaterMark: 1024 * 1024 });

/**
 * Streams the request body (the raw file, or a multipart form's `file` part) to `file`, as it arrives and
 * with backpressure, so memory stays flat whatever the size. The request is piped, not put in a pipeline:
 * a failure must leave the socket open for the 413/400 answer.
 */
export async function receiveUpload(req: Request, media: UploadMedia, file: string, limits: UploadLimits): Promise<ReceivedUpload> {
  req.setTimeout(limits.idleTimeoutMs, () => req.destroy(uploadMalformed('the upload stalled')));
  try {
    return media.kind === 'raw' ? await receiveRaw(req, media.format, file, limits) : await receiveMultipart(req, file, limits);
  } finally {
    req.setTimeout(0);
  }
}

/** Rejects when the client goes away before the whole body has arrived. */
function clientGone(req: Request, onGone: (err: Error) => void): () => void {
  const onClose = () => {
    if (!req.complete) onGone(uploadMalformed('the upload was cut off before its end'));
  };
  const onError = () => onGone(uploadMalformed('the upload was cut off before its end'));
  req.once('close', onClose);
  req.once('error', onError);
  return () => {
    req.off('close', onClose);
    req.off('error', onError);
  };
}

async function receiveRaw(req: Request, format: FileFormat, file: string, limits: UploadLimits): Promise<ReceivedUpload> {
  const count = { bytes: 0 };
  const m = meter(limits.maxBytes, count);
  const done = pipeline(m, toDisk(file));
  const stop = clientGone(req, (err) => m.destroy(err));
  req.pipe(m);
  try {
    await done;
  } finally {
    stop();
    req.unpipe(m);
  }
  return { bytes: count.bytes, format, fields: {} };
}

function formatOfPart(mimeType: string, filename: string): FileFormat | null {
  return UPLOAD_FORMAT_OF_MEDIA_TYPE[mediaTypeOf(mimeType).type] ?? FORMAT_OF_EXTENSION[extname(filename).toLowerCase()] ?? null;
}

async function receiveMultipart(req: Request, file: string, limits: UploadLimits): Promise<ReceivedUpload> {
  let bb: BusboyInstance;
  try {
    bb = Busboy({
      headers: req.headers as Parameters<typeof Busboy>[0]['headers'],
      limits: { files: 1, fields: FORM_FIELDS.size, parts: FORM_FIELDS.size + 1, fieldSize: 1_024, fieldNameSize: 100, headerPairs: 20, fileSize: limits.maxBytes },
    });
  } catch (err) {
    throw uploadMalformed(`the multipart form could not be read: ${(err as Error).message}`);
  }
  const count = { bytes: 0 };
  const fields: Record<string, string> = {};
  let format: FileFormat | null = null;
  let written: Promise<void> | null = null;
  let filePart: Transform | null = null;
  return new Promise<ReceivedUpload>((resolve, reject) => {
    let settled = false;
    const fail = (err: unknown) => {
      if (settled) return;
      settled = true;
      stop();
      req.unpipe(bb);
      filePart?.destroy(); // closes the staging file: no more of the form will come
      reject(err);
    };
    const stop = clientGone(req, fail);
    bb.on('file', (fieldName, stream, filename, _encoding, mimeType) => {
      if (fieldName !== UPLOAD_FILE_FIELD) {
        stream.resume();
        return fail(uploadMalformed(`the form has a file part named ${JSON.stringify(fieldName)}; send the file as the part ${JSON.stringify(UPLOAD_FILE_FIELD)}`));
      }
      format = formatOfPart(mimeType, filename);
      // Busboy truncates a part past fileSize and says so with 'limit'; the meter is the one that refuses.
      const m = meter(limits.maxBytes, count);
      filePart = m;
      stream.on('limit', () => m.destroy(uploadTooLarge(limits.maxBytes)));
      written = pipeline(stream, m, toDisk(file));
      written.catch(fail);
    });
    bb.on('field', (name, value, nameTruncated, valueTruncated) => {
      if (!FORM_FIELDS.has(name))
        return fail(uploadMalformed(`the form has an unknown field ${JSON.stringify(name.slice(0, 100))}; it takes ${UPLOAD_FILE_FIELD}, name and format`));
      if (nameTruncated || valueTruncated) return fail(uploadMalformed(`the form field ${name} is too long`));
      fields[name] = value;
    });
    bb.on('filesLimit', () => fail(uploadMalformed('the form has more than one file part')));
    bb.on('fieldsLimit', () => fail(uploadMalformed('the form has too many fields')));
    bb.on('partsLimit', () => fail(uploadMalformed('the form has too many parts')));
    bb.on('error', (err) => fail(uploadMalformed(`the multipart form could not be read: ${(err as Error).message}`)));
    bb.on('finish', () => {
      if (!written) return fail(uploadMalformed(`the form has no file part; send the file as the part ${JSON.stringify(UPLOAD_FILE_FIELD)}`));
      written.then(() => {
        if (settled) return;
        settled = true;
        stop();
        resolve({ bytes: count.bytes, format, fields });
      }, fail);
    });
    req.pipe(bb);
  });
}
