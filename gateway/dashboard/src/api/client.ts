import createClient, { type Client, type Middleware } from 'openapi-fetch';
import type { paths } from '../../../../libs/sdk/src/generated/openapi.d.ts';
import type { Problem } from './types.ts';

export interface FieldError {
  path: string;
  message: string;
}

/** An RFC 9457 problem answered by the API (or a network failure, status 0), ready to show. */
export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  readonly title: string;
  readonly detail: string;
  readonly requestId: string | null;
  readonly fieldErrors: FieldError[];
  readonly retryAfterSeconds: number | null;

  constructor(p: { status: number; code: string; title: string; detail: string; requestId?: string | null; errors?: FieldError[]; retryAfterSeconds?: number | null }) {
    super(p.detail || p.title);
    this.name = 'ApiError';
    this.status = p.status;
    this.code = p.code;
    this.title = p.title;
    this.detail = p.detail;
    this.requestId = p.requestId ?? null;
    this.fieldErrors = p.errors ?? [];
    this.retryAfterSeconds = p.retryAfterSeconds ?? null;
  }

  /** The message for one form field: its exact path, or the first error beneath it (`measures.0` → `measures.0.field`). */
  fieldError(path: string): string | undefined {
    const exact = this.fieldErrors.find((e) => e.path === path);
    if (exact) return exact.message;
    return this.fieldErrors.find((e) => e.path.startsWith(`${path}.`))?.message;
  }

  /**
   * This error once a field is fixed: its errors (and those beneath it) gone, or the field's new message if
   * it is still wrong. Null once no field error is left of an error that was only about fields.
   */
  withField(path: string, message?: string): ApiError | null {
    const under = (e: FieldError) => e.path === path || e.path.startsWith(`${path}.`);
    if (!this.fieldErrors.some(under)) return this;
    const rest = this.fieldErrors.filter((e) => !under(e));
    const errors = message ? [...rest, { path, message }] : rest;
    if (errors.length === 0) return null;
    return new ApiError({
      status: this.status,
      code: this.code,
      title: this.title,
      detail: this.detail,
      requestId: this.requestId,
      errors,
      retryAfterSeconds: this.retryAfterSeconds,
    });
  }
}

export function toApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  const message = err instanceof Error ? err.message : String(err);
  return new ApiError({ status: 0, code: 'client_error', title: 'Something went wrong', detail: message });
}

/** The /v1 operations, as generated from the OpenAPI document (`npm run generate:client`). */
export type ApiPaths = paths;
/** The JSON body a POST to this path takes, as the OpenAPI document says. */
export type RequestBodyOf<P extends keyof paths> = paths[P] extends { post: { requestBody: { content: { 'application/json': infer B } } } } ? B : never;

export interface ApiClient {
  /**
   * The generated client itself (openapi-fetch over the generated `paths`), with the session cookie and the
   * CSRF token: paths, parameters, bodies and answers are typed by the OpenAPI document.
   */
  readonly openapi: Client<paths>;
  setCsrfToken(token: string | null): void;
}

const CSRF_HEADER = 'x-csrf-token';

/** A failed answer of the generated client as an ApiError; the problem body arrives parsed (or as text). */
function errorOf(res: Response, body: unknown): ApiError {
  const p = (body && typeof body === 'object' ? body : {}) as Partial<Problem>;
  const retry = Number(res.headers.get('retry-after'));
  return new ApiError({
    status: res.status,
    code: p.code ?? 'http_error',
    title: p.title ?? `Request failed (${res.status})`,
    detail: p.detail ?? res.statusText,
    requestId: p.requestId ?? res.headers.get('x-request-id'),
    errors: Array.isArray(p.errors) ? p.errors : [],
    retryAfterSeconds: Number.isFinite(retry) && retry > 0 ? retry : null,
  });
}

/**
 * The client generated from the OpenAPI document, for the dashboard: the session cookie on every call, the
 * CSRF token on every write, problem bodies thrown as ApiErrors and a lost connection as a network error.
 * `onSessionEnded` runs when an authenticated call is refused with 401.
 */
export function createApiClient(opts: { onSessionEnded: () => void; origin?: string }): ApiClient {
  let csrf: string | null = null;
  // The session is a same-origin cookie, so the base is the page's own origin (a test passes its server's).
  const origin = opts.origin ?? (globalThis as { location?: { origin: string } }).location?.origin ?? 'http://localhost';
  const openapi = createClient<paths>({ baseUrl: `${origin}/v1`, credentials: 'same-origin' });

  const middleware: Middleware = {
    onRequest({ request }) {
      request.headers.set('accept', 'application/json');
      if (request.method !== 'GET' && csrf) request.headers.set(CSRF_HEADER, csrf);
      return request;
    },
    onResponse({ response, schemaPath }) {
      const isAuthCall = schemaPath.startsWith('/auth/login') || schemaPath.startsWith('/auth/signup');
      if (response.status === 401 && !isAuthCall) opts.onSessionEnded();
      return undefined;
    },
    onError({ error }) {
      if ((error as Error).name === 'AbortError') throw error;
      throw new ApiError({ status: 0, code: 'network_error', title: 'Cannot reach the server', detail: 'Check your connection and try again.' });
    },
  };
  openapi.use(middleware);

  return {
    openapi,
    setCsrfToken: (token) => {
      csrf = token;
    },
  };
}

/** The body of a typed call of the generated client, or its problem thrown as an ApiError. */
export async function unwrap<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  const { data, error, response } = await call;
  if (!response.ok) throw errorOf(response, error);
  return data as T;
}
