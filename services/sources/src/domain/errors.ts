import { AppError, notFound } from '@dap/http';
import type { ConnectorCheckError } from '../connectors/index.ts';

/** The sources domain's errors; statuses come from the shared catalogue at the edge. */
export const sourceNotFound = () => notFound('source');

/** A bad source (or upload) is a 400 naming the field. */
export const sourceRefused = (err: ConnectorCheckError) =>
  new AppError('validation_failed', `the data source was refused: ${err.message}`, { errors: [{ path: err.field, message: err.message }] });

/** A well-formed source whose target the SSRF guard refuses is a 422, as for a webhook URL. */
export const targetNotAllowed = (err: ConnectorCheckError) =>
  new AppError('unprocessable', `the data source was refused: ${err.message}`, { errors: [{ path: err.field, message: err.message }] });

export const credentialsUnavailable = () => new AppError('unavailable', 'this deployment cannot store credentials for remote sources: SOURCE_CREDENTIALS_KEY is not configured');

export const notAFileSource = (type: string) =>
  new AppError('conflict', `this is a ${type} source: only file sources (csv, json, ndjson) take uploaded data; create a new source from the file instead`);

export const wrongUploadFormat = (expected: string, got: string) =>
  new AppError('unsupported_media_type', `this source holds ${expected.toUpperCase()} data; the upload is ${got.toUpperCase()}: send the file in the source's format`);

export const syncRunning = () => new AppError('conflict', 'a sync of this source is running; upload again when it has finished', { headers: { 'Retry-After': '5' } });
