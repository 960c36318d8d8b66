import { DomainError, ERROR_CODES, type ErrorCode } from '@dap/errors';
import { AppError, PROBLEM_TYPES, PROBLEM_TYPE_BASE, problemHeaders, problemOf, problemTypeOf, statusOf } from './errors.ts';

describe('kinds to statuses at the edge', () => {
  it('gives each problem type its status and the page address clients link to', () => {
    const byType = Object.fromEntries(Object.entries(PROBLEM_TYPES).map(([name, t]) => [name, `${t.status} ${t.slug}`]));
    expect(byType).toEqual({
      invalid: '400 validation-failed',
      malformed_json: '400 malformed-json',
      unsupported_content_type: '400 unsupported-content-type',
      bad_request: '400 bad-request',
      unauthenticated: '401 unauthorized',
      forbidden: '403 forbidden',
      not_found: '404 not-found',
      method_not_allowed: '405 method-not-allowed',
      conflict: '409 conflict',
      too_large: '413 payload-too-large',
      unsupported_media_type: '415 unsupported-media-type',
      unprocessable: '422 unprocessable',
      rate_limited: '429 quota-exceeded',
      internal: '500 internal',
      bad_gateway: '502 bad-gateway',
      unavailable: '503 unavailable',
      timeout: '504 timeout',
    });
  });

  it("answers each code of the catalogue with its kind's problem type, but the two 400 codes that have a page of their own", () => {
    const ownPage = new Set<ErrorCode>(['malformed_json', 'unsupported_content_type']);
    for (const [code, { kind }] of Object.entries(ERROR_CODES) as [ErrorCode, (typeof ERROR_CODES)[ErrorCode]][]) {
      const type = ownPage.has(code) ? code : kind;
      expect({ code, type: problemTypeOf(code), status: statusOf(code) }).toEqual({ code, type, status: PROBLEM_TYPES[type as keyof typeof PROBLEM_TYPES].status });
    }
    // The exception matters: by their kind, those two would answer with the bad-request page.
    expect([ERROR_CODES.malformed_json.kind, ERROR_CODES.unsupported_content_type.kind]).toEqual(['bad_request', 'bad_request']);
  });

  it('gives every code a problem type, and every problem type a distinct slug', () => {
    for (const code of Object.keys(ERROR_CODES) as ErrorCode[]) expect(PROBLEM_TYPES[problemTypeOf(code)]).toBeDefined();
    const slugs = Object.values(PROBLEM_TYPES).map((t) => t.slug);
    expect(new Set(slugs).size).toBe(slugs.length);
  });
});

describe('the problem body', () => {
  it('carries the specific code, the type page of its kind, the detail and the request id', () => {
    const body = problemOf(new DomainError('report_data_replaced', 'report rep_1 cannot be exported in full'), '/v1/reports/rep_1/export', 'req_9');
    expect(body).toEqual({
      type: `${PROBLEM_TYPE_BASE}conflict`,
      title: 'Conflict',
      status: 409,
      detail: 'report rep_1 cannot be exported in full',
      instance: '/v1/reports/rep_1/export',
      code: 'report_data_replaced',
      requestId: 'req_9',
    });
  });

  it('carries errors[] and errorCount when there are field errors, and never the cause', () => {
    const err = new DomainError('validation_failed', 'the inputs are invalid', {
      errors: [{ path: 'inputs.0.x', message: 'required' }],
      errorCount: 3,
      cause: new Error('mongodb://user:secret@db'),
    });
    const body = problemOf(err, '/v1/models/mdl_1/predict', 'req_1');
    expect(body).toMatchObject({
      code: 'validation_failed',
      status: 400,
      type: `${PROBLEM_TYPE_BASE}validation-failed`,
      errors: [{ path: 'inputs.0.x', message: 'required' }],
      errorCount: 3,
    });
    expect(JSON.stringify(body)).not.toContain('secret');
  });

  it('sends Retry-After from a domain retry delay, and an edge error its own headers', () => {
    expect(problemHeaders(new DomainError('source_sync_running', 'x', { retryAfterSeconds: 5 }))).toEqual({ 'Retry-After': '5' });
    expect(problemHeaders(new DomainError('source_not_found', 'x'))).toEqual({});
    expect(problemHeaders(new AppError('method_not_allowed', 'x', { headers: { Allow: 'GET' } }))).toEqual({ Allow: 'GET' });
  });
});
