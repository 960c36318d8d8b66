import { DomainError, notFound } from '@dap/errors';
import type { ConnectorCheckError } from './connectors/index.ts';

/** The sources domain's errors, by their codes in @dap/errors; statuses are chosen at the edge. */
export const sourceNotFound = () => notFound('source_not_found', 'source');

/** A bad source (or upload) names the field. */
export const sourceRefused = (err: ConnectorCheckError) =>
  new DomainError('source_refused', `the data source was refused: ${err.message}`, { errors: [{ path: err.field, message: err.message }] });

/** A well-formed source whose target the SSRF guard refuses is unprocessable, as for a webhook URL. */
export const targetNotAllowed = (err: ConnectorCheckError) =>
  new DomainError('source_target_not_allowed', `the data source was refused: ${err.message}`, { errors: [{ path: err.field, message: err.message }] });

export const credentialsUnavailable = () =>
  new DomainError('source_credentials_unavailable', 'this deployment cannot store credentials for remote sources: SOURCE_CREDENTIALS_KEY is not configured');

export const notAFileSource = (type: string) =>
  new DomainError('source_not_uploadable', `this is a ${type} source: only file sources (csv, json, ndjson) take uploaded data; create a new source from the file instead`);

export const wrongUploadFormat = (expected: string, got: string) =>
  new DomainError('upload_format_mismatch', `this source holds ${expected.toUpperCase()} data; the upload is ${got.toUpperCase()}: send the file in the source's format`);

export const syncRunning = (retry = 'upload again') =>
  new DomainError('source_sync_running', `a sync of this source is running; ${retry} when it has finished`, { retryAfterSeconds: 5 });

export const uploadTooLarge = (maxBytes: number) => new DomainError('upload_too_large', `the file is larger than the upload limit of ${maxBytes} bytes`);
export const uploadMalformed = (detail: string) => new DomainError('upload_malformed', detail);
export const uploadUnsupported = (detail: string) => new DomainError('upload_unsupported', detail);

/** A schedule that does not parse names its field (schedule, schedule.every, schedule.cron, schedule.timezone). */
export const fieldInvalid = (path: string, message: string) => new DomainError('validation_failed', `the body is invalid: ${path}: ${message}`, { errors: [{ path, message }] });

export const quarantineNotFound = () => new DomainError('source_quarantine_not_found', 'no sync of this source has quarantined rows');
