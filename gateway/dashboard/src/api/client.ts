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
}

export function toApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  const message = err instanceof Error ? err.message : String(err);
  return new ApiError({ status: 0, code: 'client_error', title: 'Something went wrong', detail: message });
}

export interface ApiClient {
  get<T>(path: string, signal?: AbortSignal): Promise<T>;
  post<T>(path: string, body?: unknown): Promise<T>;
  /** POST answering with a status the caller needs (201 vs 202). */
  postWithStatus<T>(path: string, body?: unknown): Promise<{ status: number; body: T }>;
  del(path: string): Promise<void>;
  /** POST a multipart form (a file upload): the browser streams the file, and sets the form's Content-Type. */
  upload<T>(path: string, form: FormData): Promise<T>;
  setCsrfToken(token: string | null): void;
}

const CSRF_HEADER = 'x-csrf-token';

/**
 * fetch for the /v1 API with the session cookie: JSON in and out, the CSRF token on every write, problem
 * bodies turned into ApiErrors. `onSessionEnded` runs when an authenticated call is refused with 401.
 */
export function createApiClient(opts: { onSessionEnded: () => void }): ApiClient {
  let csrf: string | null = null;

  async function send<T>(method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<{ status: number; body: T }> {
    const headers: Record<string, string> = { accept: 'application/json' };
    const form = body instanceof FormData;
    if (body !== undefined && !form) headers['content-type'] = 'application/json';
    if (method !== 'GET' && csrf) headers[CSRF_HEADER] = csrf;
    let res: Response;
    try {
      res = await fetch(`/v1${path}`, {
        method,
        headers,
        credentials: 'same-origin',
        ...(body !== undefined ? { body: form ? body : JSON.stringify(body) } : {}),
        ...(signal ? { signal } : {}),
      });
    } catch (err) {
      if ((err as Error).name === 'AbortError') throw err;
      throw new ApiError({ status: 0, code: 'network_error', title: 'Cannot reach the server', detail: 'Check your connection and try again.' });
    }
    const text = await res.text();
    let parsed: unknown = undefined;
    if (text) {
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = undefined;
      }
    }
    if (!res.ok) {
      const p = (parsed ?? {}) as Partial<Problem>;
      const retry = Number(res.headers.get('retry-after'));
      const error = new ApiError({
        status: res.status,
        code: p.code ?? 'http_error',
        title: p.title ?? `Request failed (${res.status})`,
        detail: p.detail ?? res.statusText,
        requestId: p.requestId ?? res.headers.get('x-request-id'),
        errors: Array.isArray(p.errors) ? p.errors : [],
        retryAfterSeconds: Number.isFinite(retry) && retry > 0 ? retry : null,
      });
      const isAuthCall = path.startsWith('/auth/login') || path.startsWith('/auth/signup');
      if (res.status === 401 && !isAuthCall) opts.onSessionEnded();
      throw error;
    }
    return { status: res.status, body: parsed as T };
  }

  return {
    get: async <T>(path: string, signal?: AbortSignal) => (await send<T>('GET', path, undefined, signal)).body,
    post: async <T>(path: string, body?: unknown) => (await send<T>('POST', path, body)).body,
    postWithStatus: <T>(path: string, body?: unknown) => send<T>('POST', path, body),
    del: async (path: string) => void (await send<unknown>('DELETE', path)),
    upload: async <T>(path: string, form: FormData) => (await send<T>('POST', path, form)).body,
    setCsrfToken: (token) => {
      csrf = token;
    },
  };
}
