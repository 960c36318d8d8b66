import { Router } from 'express';
import { newId, replaceSourceDataQuery, uploadSourceQuery, type FileFormat } from '@dap/contracts';
import { DomainError } from '@dap/errors';
import { callerOf, lingerAfterEarlyAnswer, parseOr400 } from '@dap/http';
import type { SourceService } from '../domain/source.service.ts';
import { wrongUploadFormat } from '../domain/errors.ts';
import { toSourceDto } from './dto.ts';
import { receiveUpload, uploadMediaOf, type ReceivedUpload, type UploadLimits } from './upload-body.ts';

const location = (id: string) => `/v1/sources/${encodeURIComponent(id)}`;
/** One value from the query or the form; both may carry it, and then they must agree. */
function oneOf<T extends string>(what: string, fromQuery: T | undefined, fromForm: T | undefined): T | undefined {
  if (fromQuery !== undefined && fromForm !== undefined && fromQuery !== fromForm) {
    throw new DomainError('validation_failed', `${what} is given twice with different values (query and form)`, { errors: [{ path: what, message: 'conflicting values' }] });
  }
  return fromQuery ?? fromForm;
}

/**
 * The format the file is in: the one asked for, else the one the body names. For a raw body they must agree
 * (its media type is what it is); a multipart part may be application/octet-stream, so the form decides.
 */
function formatOf(asked: FileFormat | undefined, received: ReceivedUpload, raw: boolean): FileFormat {
  if (raw && asked && received.format && asked !== received.format) {
    throw new DomainError('upload_format_mismatch', `format is ${asked} but the body is ${received.format.toUpperCase()}; send the matching Content-Type`);
  }
  const format = asked ?? received.format;
  if (!format) {
    throw new DomainError('validation_failed', 'the file format is unknown: give format (csv, json or ndjson), a part Content-Type or a file name with its extension', {
      errors: [{ path: 'format', message: 'required' }],
    });
  }
  return format;
}

/**
 * Streamed file uploads. They read their own bodies (mounted before the JSON parser) and stream them to a
 * temporary file beside the source's staging file; nothing of the file is held in memory.
 */
export function uploadRoutes(service: SourceService, limits: UploadLimits): Router {
  const r = Router();
  // A refusal may come before the whole file has arrived: the rest is dropped for a moment, then the connection closes.
  r.use(['/upload', '/:id/data'], (req, res, next) => {
    lingerAfterEarlyAnswer(req, res);
    next();
  });

  r.post('/upload', async (req, res) => {
    const caller = callerOf(req);
    const query = parseOr400(uploadSourceQuery, req.query, 'query');
    const media = uploadMediaOf(req, limits);
    if (media.kind === 'raw' && !query.name) {
      throw new DomainError('validation_failed', 'the query is invalid: name: required', { errors: [{ path: 'name', message: 'required' }] });
    }
    const id = newId('src');
    const file = await service.uploadTemp(caller.accountId, id);
    let received: ReceivedUpload;
    try {
      received = await receiveUpload(req, media, file, limits);
    } catch (err) {
      await service.discardNew(caller.accountId, id);
      throw err;
    }
    let name: string;
    let format: FileFormat;
    try {
      const form = parseOr400(uploadSourceQuery, { ...received.fields }, 'form');
      const given = oneOf('name', query.name, form.name);
      if (!given)
        throw new DomainError('validation_failed', 'the source name is missing: give name in the query or as a form field', { errors: [{ path: 'name', message: 'required' }] });
      name = given;
      format = formatOf(oneOf('format', query.format, form.format), received, media.kind === 'raw');
    } catch (err) {
      await service.discardNew(caller.accountId, id);
      throw err;
    }
    const doc = await service.createFromUpload(caller, id, { name, format, file });
    res.status(201).location(location(doc._id)).json(toSourceDto(doc));
  });

  r.put('/:id/data', async (req, res) => {
    const caller = callerOf(req);
    // Refused before the body is read: an unknown source (first: another account's answers 404 whatever is
    // sent), one that is not a file, a body it does not take, or a file of another format.
    const current = await service.fileSource(caller.accountId, req.params.id);
    const query = parseOr400(replaceSourceDataQuery, req.query, 'query');
    const media = uploadMediaOf(req, limits);
    const asked = query.format;
    if (asked && asked !== current.type) throw wrongUploadFormat(current.type, asked);
    if (media.kind === 'raw' && media.format !== current.type) throw wrongUploadFormat(current.type, media.format);
    const file = await service.uploadTemp(caller.accountId, current._id);
    let format: FileFormat;
    try {
      const received = await receiveUpload(req, media, file, limits);
      if ('name' in received.fields)
        throw new DomainError('validation_failed', 'the form field name is not taken here: the source keeps its name', { errors: [{ path: 'name', message: 'not allowed' }] });
      const form = parseOr400(replaceSourceDataQuery, { ...received.fields }, 'form');
      format = formatOf(oneOf('format', asked, form.format), received, media.kind === 'raw');
    } catch (err) {
      await service.discardTemp(file);
      throw err;
    }
    const doc = await service.replaceData(caller, current._id, { format, file });
    res.status(202).location(location(doc._id)).json(toSourceDto(doc));
  });
  return r;
}
