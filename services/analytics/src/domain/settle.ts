export type Settled<T> = { done: true; value: T } | { done: false };

/**
 * Waits for `promise` at most `ms`; the promise keeps running either way. A budget of 0 waits for nothing, not
 * even a promise already settled: which of those a caller got would depend on timing.
 */
export async function settleWithin<T>(promise: Promise<T>, ms: number): Promise<Settled<T>> {
  if (ms <= 0) return { done: false };
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<Settled<T>>((resolve) => {
    timer = setTimeout(() => resolve({ done: false }), ms);
  });
  try {
    return await Promise.race([promise.then((value): Settled<T> => ({ done: true, value })), late]);
  } finally {
    clearTimeout(timer);
  }
}
