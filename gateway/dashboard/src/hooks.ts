import { useCallback, useEffect, useRef, useState } from 'react';
import { toApiError, type ApiClient, type ApiError } from './api/client.ts';
import { useApi } from './context.tsx';

export interface Resource<T> {
  data: T | undefined;
  error: ApiError | null;
  loading: boolean;
  /** Loads again, keeping the current data on screen meanwhile. */
  reload: () => Promise<void>;
  setData: (update: (old: T | undefined) => T | undefined) => void;
}

/** Loads something from the API when `key` changes; stale answers from an older key are dropped. */
export function useResource<T>(key: string | null, load: (api: ApiClient, signal: AbortSignal) => Promise<T>): Resource<T> {
  const api = useApi();
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<ApiError | null>(null);
  const [loading, setLoading] = useState(key !== null);
  const loadRef = useRef(load);
  loadRef.current = load;
  const generation = useRef(0);
  const current = useRef<AbortController | null>(null);

  const run = useCallback(
    async (clear: boolean) => {
      if (key === null) return;
      const gen = ++generation.current;
      current.current?.abort();
      const ctrl = new AbortController();
      current.current = ctrl;
      if (clear) {
        setData(undefined);
        setLoading(true);
      }
      try {
        const value = await loadRef.current(api, ctrl.signal);
        if (gen !== generation.current) return;
        setData(value);
        setError(null);
      } catch (err) {
        if ((err as Error).name === 'AbortError' || gen !== generation.current) return;
        setError(toApiError(err));
      } finally {
        if (gen === generation.current) setLoading(false);
      }
    },
    [api, key],
  );

  useEffect(() => {
    void run(true);
    return () => current.current?.abort();
  }, [run]);

  const reload = useCallback(() => run(false), [run]);
  const update = useCallback((fn: (old: T | undefined) => T | undefined) => setData((old) => fn(old)), []);
  return { data, error, loading, reload, setData: update };
}

/** Calls `fn` every `ms` while `ms` is not null and the page is visible. */
export function useInterval(fn: () => void, ms: number | null): void {
  const ref = useRef(fn);
  ref.current = fn;
  useEffect(() => {
    if (ms === null) return;
    const id = window.setInterval(() => {
      if (document.visibilityState === 'visible') ref.current();
    }, ms);
    return () => window.clearInterval(id);
  }, [ms]);
}

/** Runs an async action with a pending flag and its error kept for display. */
export function useAction<A extends unknown[], R>(fn: (...args: A) => Promise<R>) {
  const [pending, setPending] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);
  const ref = useRef(fn);
  ref.current = fn;
  const run = useCallback(async (...args: A): Promise<R | undefined> => {
    setPending(true);
    setError(null);
    try {
      return await ref.current(...args);
    } catch (err) {
      setError(toApiError(err));
      return undefined;
    } finally {
      setPending(false);
    }
  }, []);
  /**
   * A field was edited: its error goes at once when `stillWrong` (the form's own check of the new value)
   * finds nothing, or shows that check's message; the other fields' errors stay until they are fixed.
   */
  const fixField = useCallback((path: string, stillWrong?: string | null) => setError((old) => old?.withField(path, stillWrong ?? undefined) ?? null), []);
  return { run, pending, error, setError, fixField };
}

export function useDocumentTitle(title: string): void {
  useEffect(() => {
    document.title = title ? `${title} · DAP Dashboard` : 'DAP Dashboard';
  }, [title]);
}
