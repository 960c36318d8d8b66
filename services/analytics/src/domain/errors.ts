import { DomainError, notFound, type FieldError } from '@dap/errors';

/** The analytics domain's errors, by their codes in @dap/errors; statuses are chosen at the edge. */
export const sourceNotFound = () => notFound('source_not_found', 'source');
export const reportNotFound = () => notFound('report_not_found', 'report');
export const insightNotFound = () => notFound('insight_not_found', 'insight');
export const dashboardNotFound = () => notFound('dashboard_not_found', 'dashboard');
export const tileNotFound = () => notFound('dashboard_tile_not_found', 'tile');

/** A body that passed its schema but does not fit the resource: errors[] names the fields. */
export const bodyInvalid = (errors: FieldError[]) =>
  new DomainError('validation_failed', `the body is invalid: ${errors.map((e) => `${e.path}: ${e.message}`).join('; ')}`, { errors });

export const dashboardFull = (max: number) =>
  new DomainError('dashboard_full', `the dashboard already holds ${max} tiles, the most a dashboard may; remove a tile first, or pin the insight to another dashboard`);

export const dashboardChanged = () =>
  new DomainError('dashboard_changed', 'the dashboard changed while the request ran (another edit of its tiles); read it again and retry', { retryAfterSeconds: 1 });

/** The query does not fit the source: every part that does not is in errors[]. */
export const queryInvalid = (errors: FieldError[]) =>
  new DomainError('validation_failed', `the query is invalid: ${errors.map((e) => `${e.path}: ${e.message}`).join('; ')}`, { errors });

export const sourceNotReady = (sourceId: string, status: string) =>
  new DomainError('source_not_ready', `source ${sourceId} cannot be queried yet: its status is ${status}; query it after it is ready (the source.ready event)`);

export const sourceHasNoData = (sourceId: string) => new DomainError('source_has_no_data', `source ${sourceId} has no data to query yet; sync it and wait for source.ready`);

export const tooManyQueries = (max: number) =>
  new DomainError('query_concurrency_limit', `this account already has ${max} queries running, the most allowed at once; wait for one to finish and retry`, {
    retryAfterSeconds: 1,
  });

export const reportNotExportable = (id: string, status: string, error: string | null) =>
  status === 'running'
    ? new DomainError('report_running', `report ${id} is still running; export it once it has completed`, { retryAfterSeconds: 1 })
    : new DomainError('report_failed', `report ${id} failed${error ? ` (${error})` : ''}; there is nothing to export`);

export const reportDataReplaced = (id: string) =>
  new DomainError(
    'report_data_replaced',
    `report ${id} cannot be exported in full: the data it was computed from has been replaced by a newer sync of its source; run the query again to export the current data`,
  );

/** A run without a report has nowhere to record its failure: it is the answer. */
export const queryFailed = (reason: string) => new DomainError('query_failed', reason);
export const queryInterrupted = (reason: string) => new DomainError('query_interrupted', reason, { retryAfterSeconds: 1 });

export const exportInterrupted = (cause: Error) => new DomainError('export_interrupted', cause.message, { retryAfterSeconds: 1, cause });

export const reportMadeBeforeExports = (id: string) =>
  new DomainError(
    'report_format_unavailable',
    `report ${id} was made before full exports were recorded and has only its CSV page; run the query again to export it in this format`,
  );

/** Reasons a report fails with, in words a customer can act on. */
export const FAILURE = Object.freeze({
  tooLarge: (bytes: number, max: number) =>
    `the result is too large to store (${Math.round(bytes / 1024)} KiB, the limit is ${Math.round(max / 1024)} KiB); lower limit or select fewer columns`,
  interrupted: 'the query was interrupted by a service restart; run it again',
});

/** Bytes for people: 1.5 GiB, 300 MiB, 12 KiB. */
export function formatBytes(n: number): string {
  const units = ['bytes', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return u === 0 ? `${n} bytes` : `${Number(v.toPrecision(3))} ${units[u]}`;
}

export const tooMuchToRead = (bytes: number, max: number, plan: string) =>
  new DomainError(
    'query_read_limit',
    `this query would read ${formatBytes(bytes)} (${bytes} bytes) of the source's data, more than the ${formatBytes(max)} (${max} bytes) limit on bytes read per query (maxBytesRead) of the ${plan} plan; narrow timeDimension.from and to, use fewer columns, or move to a larger plan. A dryRun shows what a query would read.`,
  );
