import { AppError, notFound } from '@dap/http';
import type { ConnectorCheckError } from '../connectors/index.ts';

/** The sources domain's errors; statuses come from the shared catalogue at the edge. */
export const sourceNotFound = () => notFound('source');

/** 400 for a source that fails its check; 422, as for a webhook URL, when its address may not be reached. */
export const sourceRefused = (err: ConnectorCheckError) =>
  err.refusedTarget
    ? new AppError('unprocessable', `the data source's target is not allowed: ${err.message}`, { errors: [{ path: err.field, message: err.message }] })
    : new AppError('validation_failed', `the data source was refused: ${err.message}`, { errors: [{ path: err.field, message: err.message }] });

export const credentialsUnavailable = () => new AppError('unavailable', 'this deployment cannot store credentials for remote sources: SOURCE_CREDENTIALS_KEY is not configured');
