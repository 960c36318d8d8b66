import { DomainError, ERROR_CODES, ERROR_KINDS, type ErrorCode } from '@dap/errors';
import { AppError, PROBLEM_TYPES, PROBLEM_TYPE_BASE, problemHeaders, problemOf, problemTypeOf, statusOf } from './errors.ts';

describe('kinds to statuses at the edge', () => {
  it('maps each kind to its status', () => {
    const byKind = Object.fromEntries(ERROR_KINDS.map((k) => [k, PROBLEM_TYPES[k].status]));
    expect(byKind).toEqual({
      invalid: 400,
      bad_request: 400,
      unauthenticated: 401,
      forbidden: 403,
      not_found: 404,
      method_not_allowed: 405,
      conflict: 409,
      too_large: 413,
      unsupported_media_type: 415,
      unprocessable: 422,
      rate_limited: 429,
      internal: 500,
      bad_gateway: 502,
      unavailable: 503,
      timeout: 504,
    });
  });

  it("answers each code with its kind's status, keeping the pages the codes had", () => {
    const cases: [ErrorCode, number, string][] = [
      ['source_not_found', 404, 'not-found'],
      ['model_not_ready', 409, 'conflict'],
      ['validation_failed', 400, 'validation-failed'],
      ['malformed_json', 400, 'malformed-json'],
      ['unsupported_content_type', 400, 'unsupported-content-type'],
      ['bad_request', 400, 'bad-request'],
      ['upload_too_large', 413, 'payload-too-large'],
      ['quota_exceeded', 429, 'quota-exceeded'],
      ['source_target_not_allowed', 422, 'unprocessable'],
      ['training_unavailable', 503, 'unavailable'],
      ['login_failed', 401, 'unauthorized'],
      ['session_required', 403, 'forbidden'],
    ];
    for (const [code, status, slug] of cases) expect({ code, status: statusOf(code), slug: PROBLEM_TYPES[problemTypeOf(code)].slug }).toEqual({ code, status, slug });
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
