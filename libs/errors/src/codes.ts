import type { ErrorKind } from './kinds.ts';

interface CodeEntry {
  kind: ErrorKind;
  /** One line for the API reference and the problem pages: when a response carries this code. */
  meaning: string;
}

/**
 * The platform's codes: raised by the shared HTTP layer and the gateway for any operation (a malformed body,
 * missing credentials, a rate limit, an outage), and `validation_failed` for any request field that fails its
 * schema.
 */
const PLATFORM = {
  validation_failed: {
    kind: 'invalid',
    meaning:
      'One or more fields, query parameters or path identifiers failed validation, or do not fit the resource (a query naming a column the source lacks, inputs a model does not take); errors[] names them.',
  },
  malformed_json: { kind: 'bad_request', meaning: 'The body is not valid JSON, nests too deeply or uses a forbidden field name.' },
  unsupported_content_type: { kind: 'bad_request', meaning: 'The body is in a media type the operation does not take.' },
  bad_request: { kind: 'bad_request', meaning: 'The request is malformed in a way other than a field: an unknown or repeated query parameter, a bad header.' },
  unauthorized: { kind: 'unauthenticated', meaning: 'No valid API key or session came with the request.' },
  forbidden: { kind: 'forbidden', meaning: 'The credentials do not allow this operation (a missing scope, or a session is needed).' },
  not_found: { kind: 'not_found', meaning: 'No operation answers this path.' },
  method_not_allowed: { kind: 'method_not_allowed', meaning: 'The path does not answer this method; Allow lists those it does.' },
  idempotency_key_in_use: { kind: 'conflict', meaning: 'A request with the same Idempotency-Key is still running; retry after Retry-After.' },
  payload_too_large: { kind: 'too_large', meaning: 'The body is larger than the limit of the operation.' },
  unsupported_media_type: { kind: 'unsupported_media_type', meaning: 'The upload is in a media type, coding or charset the operation does not take.' },
  idempotency_key_reused: { kind: 'unprocessable', meaning: 'The Idempotency-Key was used before with a different request body.' },
  quota_exceeded: { kind: 'rate_limited', meaning: "The plan's requests per minute are used up, or too many failed authentications came from the address." },
  internal: { kind: 'internal', meaning: 'An unexpected error on our side.' },
  bad_gateway: { kind: 'bad_gateway', meaning: 'The service behind the gateway failed to answer properly.' },
  unavailable: { kind: 'unavailable', meaning: 'A service or a dependency is temporarily unavailable.' },
  timeout: { kind: 'timeout', meaning: 'The service behind the gateway did not answer in time.' },
  service_stopping: { kind: 'unavailable', meaning: 'The instance that took the request is shutting down; retry.' },
  service_busy: { kind: 'unavailable', meaning: 'Too much work is queued on the instance that took the request; retry after Retry-After.' },
} as const satisfies Record<string, CodeEntry>;

const ACCOUNTS = {
  email_taken: { kind: 'conflict', meaning: 'An account with this e-mail already exists.' },
  login_failed: { kind: 'unauthenticated', meaning: 'The e-mail or password is wrong.' },
  session_ended: { kind: 'unauthenticated', meaning: 'The dashboard session has expired or was ended.' },
  account_closed: { kind: 'unauthenticated', meaning: 'The account the credentials belong to no longer exists.' },
  session_required: { kind: 'forbidden', meaning: 'The operation needs a dashboard session, not an API key.' },
  account_not_found: { kind: 'not_found', meaning: 'The account does not exist.' },
  user_not_found: { kind: 'not_found', meaning: 'No dashboard user has this e-mail.' },
  api_key_not_found: { kind: 'not_found', meaning: 'The API key does not exist or belongs to another account.' },
  api_key_not_rollable: { kind: 'conflict', meaning: 'A revoked or expired API key cannot be rolled.' },
  api_key_already_rolled: { kind: 'conflict', meaning: 'The API key was already rolled; roll the key that replaces it instead.' },
  current_password_wrong: { kind: 'forbidden', meaning: 'The current password given to change the password is wrong; errors[] names currentPassword.' },
  reset_token_invalid: { kind: 'invalid', meaning: 'The password reset link is unknown, expired or already used; ask the operator for a new one.' },
} as const satisfies Record<string, CodeEntry>;

/** Sources, and the analytics and models operations that name a source. */
const SOURCES = {
  source_not_found: { kind: 'not_found', meaning: 'The source does not exist or belongs to another account.' },
  source_refused: {
    kind: 'invalid',
    meaning: 'The data failed its check (a file that does not parse, an unreachable URL or database, a table that is not there); errors[] names the field.',
  },
  source_target_not_allowed: { kind: 'unprocessable', meaning: 'The source points at an address the platform may not connect to.' },
  source_credentials_unavailable: { kind: 'unavailable', meaning: 'This deployment cannot store credentials for remote sources.' },
  source_not_uploadable: { kind: 'conflict', meaning: 'Only file sources (csv, json, ndjson) take uploaded data.' },
  source_sync_running: { kind: 'conflict', meaning: 'A sync of the source is running; retry after Retry-After.' },
  source_not_ready: { kind: 'conflict', meaning: 'The source is not ready yet (still syncing, or its first sync failed).' },
  source_has_no_data: { kind: 'conflict', meaning: 'The source has no data yet; sync it and wait for source.ready.' },
  source_quarantine_not_found: { kind: 'not_found', meaning: 'No sync of the source has set rows aside (schemaPolicy quarantine).' },
  upload_format_mismatch: { kind: 'unsupported_media_type', meaning: "The uploaded file's format is not the one named, or not the source's." },
  upload_unsupported: { kind: 'unsupported_media_type', meaning: 'The upload is in a media type, coding or charset uploads do not take.' },
  upload_malformed: { kind: 'bad_request', meaning: 'The upload body is malformed (a broken multipart form, a missing file part).' },
  upload_too_large: { kind: 'too_large', meaning: 'The file is larger than the upload limit.' },
} as const satisfies Record<string, CodeEntry>;

const ANALYTICS = {
  query_concurrency_limit: { kind: 'conflict', meaning: 'The account already runs as many queries as it may at once; retry after Retry-After.' },
  query_read_limit: { kind: 'unprocessable', meaning: "The query would read more of the source's data than the plan allows per query (maxBytesRead); narrow it." },
  report_not_found: { kind: 'not_found', meaning: 'The report does not exist or belongs to another account.' },
  report_running: { kind: 'conflict', meaning: 'The report is still running; export it once it has completed.' },
  report_failed: { kind: 'conflict', meaning: 'The report failed; there is nothing to export.' },
  report_data_replaced: { kind: 'conflict', meaning: 'A newer sync replaced the data the report was computed from; run the query again.' },
  report_format_unavailable: { kind: 'conflict', meaning: 'The report predates full exports and has only its CSV page; run the query again.' },
  export_interrupted: { kind: 'unavailable', meaning: 'The export could not be completed; retry after Retry-After.' },
  query_failed: { kind: 'unprocessable', meaning: 'A query run without saving a report (saveReport: false, or an insight run) failed; detail says why.' },
  query_interrupted: { kind: 'unavailable', meaning: 'A query run without saving a report was cut short by a service restart; retry after Retry-After.' },
  insight_not_found: { kind: 'not_found', meaning: 'The insight does not exist or belongs to another account.' },
  dashboard_not_found: { kind: 'not_found', meaning: 'The dashboard does not exist or belongs to another account.' },
  dashboard_tile_not_found: { kind: 'not_found', meaning: 'The dashboard has no tile with this id.' },
  dashboard_full: { kind: 'conflict', meaning: 'The dashboard already holds as many tiles as a dashboard may; remove one first.' },
  dashboard_changed: { kind: 'conflict', meaning: 'The dashboard changed while the request ran (another edit of its tiles); read it again and retry.' },
} as const satisfies Record<string, CodeEntry>;

const MODELS = {
  model_not_found: { kind: 'not_found', meaning: 'The model does not exist or belongs to another account.' },
  model_version_not_found: { kind: 'not_found', meaning: 'The model has no such version.' },
  model_alias_not_found: { kind: 'not_found', meaning: 'The model has no such alias.' },
  model_not_ready: { kind: 'conflict', meaning: 'The model is still training or failed; only a ready model predicts.' },
  model_not_servable: { kind: 'conflict', meaning: 'The model cannot serve predictions yet.' },
  model_builtin_immutable: { kind: 'conflict', meaning: 'Built-in models cannot be deleted, retrained or given versions and aliases.' },
  model_not_retrainable: { kind: 'conflict', meaning: 'Only models trained from a source can be retrained.' },
  model_training: { kind: 'conflict', meaning: 'The latest version is still training; retry once it is ready or failed.' },
  model_changed: { kind: 'conflict', meaning: 'The model changed while the request ran (another retraining, a deletion, an alias move); read it again.' },
  model_version_not_ready: { kind: 'conflict', meaning: 'Only a ready version can be given an alias.' },
  model_output_not_finite: { kind: 'unprocessable', meaning: "The model's output for an input is not a finite number: its values are too large in magnitude." },
  model_run_failed: { kind: 'unprocessable', meaning: 'The uploaded ONNX model failed on these inputs.' },
  model_run_timeout: { kind: 'unprocessable', meaning: 'The uploaded ONNX model ran longer than its time limit on these inputs.' },
  training_unavailable: {
    kind: 'unavailable',
    meaning: 'Training from sources is not configured on this instance, or it trains as many models as it may; retry after Retry-After.',
  },
} as const satisfies Record<string, CodeEntry>;

const WEBHOOKS = {
  webhook_not_found: { kind: 'not_found', meaning: 'The webhook endpoint does not exist or belongs to another account.' },
  webhook_message_not_found: { kind: 'not_found', meaning: 'No event with this id was sent to the endpoint.' },
  webhook_target_not_allowed: { kind: 'unprocessable', meaning: 'The webhook URL points at an address the platform may not deliver to.' },
  webhook_endpoint_limit: { kind: 'unprocessable', meaning: 'The account has as many webhook endpoints as it may; delete one first.' },
  webhook_disabled: { kind: 'conflict', meaning: 'The endpoint is disabled; enable it to receive events again.' },
  webhook_delivery_in_progress: { kind: 'conflict', meaning: 'The message is still being delivered; redeliver it once that has finished.' },
  webhook_delivery_not_pending: { kind: 'conflict', meaning: 'The message has no retry waiting (it was delivered, failed for good or was cancelled); redeliver it instead.' },
  webhook_secret_rotation_conflict: { kind: 'conflict', meaning: 'Another request rotated the secret at the same time.' },
} as const satisfies Record<string, CodeEntry>;

/**
 * Every error code a response can carry, with its kind. One shared catalogue, grouped by the service that
 * raises each code: a code keeps its meaning wherever it appears (`source_not_found` from sources, analytics
 * or models), and the OpenAPI document lists it once. See the README of this library.
 */
export const ERROR_CODES: Readonly<Record<ErrorCode, CodeEntry>> = Object.freeze({ ...PLATFORM, ...ACCOUNTS, ...SOURCES, ...ANALYTICS, ...MODELS, ...WEBHOOKS });
export type ErrorCode = keyof typeof PLATFORM | keyof typeof ACCOUNTS | keyof typeof SOURCES | keyof typeof ANALYTICS | keyof typeof MODELS | keyof typeof WEBHOOKS;

/** The codes grouped as the catalogue groups them, for documentation. */
export const ERROR_CODE_GROUPS: Readonly<Record<string, readonly ErrorCode[]>> = Object.freeze({
  platform: Object.keys(PLATFORM) as ErrorCode[],
  accounts: Object.keys(ACCOUNTS) as ErrorCode[],
  sources: Object.keys(SOURCES) as ErrorCode[],
  analytics: Object.keys(ANALYTICS) as ErrorCode[],
  models: Object.keys(MODELS) as ErrorCode[],
  webhooks: Object.keys(WEBHOOKS) as ErrorCode[],
});

export const isErrorCode = (value: string): value is ErrorCode => Object.hasOwn(ERROR_CODES, value);
