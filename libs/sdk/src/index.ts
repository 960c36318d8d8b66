export { createDapClient, paginate, METHOD_OF_OPERATION, type DapClient, type ListAllParams, type UploadOptions } from './client.ts';
export { ApiPromise, type ApiResponse, type DapClientOptions, type RateLimitInfo, type RequestOptions } from './transport.ts';
export { DapApiError, DapConnectionError, DapError, RateLimitedError, parseRetryAfter, type DapErrorCode } from './errors.ts';
export * from './operations.ts';
export type { components, operations, paths } from './generated/openapi.d.ts';
