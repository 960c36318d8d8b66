/**
 * What sort of failure an error is. The domain picks a kind through its code; the HTTP edge (`@dap/http`)
 * alone turns a kind into a status, so no domain code knows about HTTP.
 */
export const ERROR_KINDS = [
  'invalid',
  'bad_request',
  'unauthenticated',
  'forbidden',
  'not_found',
  'method_not_allowed',
  'conflict',
  'too_large',
  'unsupported_media_type',
  'unprocessable',
  'rate_limited',
  'internal',
  'bad_gateway',
  'unavailable',
  'timeout',
] as const;
export type ErrorKind = (typeof ERROR_KINDS)[number];
