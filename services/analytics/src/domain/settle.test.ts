import { settleWithin } from './settle.ts';

describe('settleWithin', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  /** Whether `p` has settled, without waiting for it (the microtask queue drains first). */
  const settledYet = async (p: Promise<unknown>) => {
    let done = false;
    void p.then(
      () => (done = true),
      () => (done = true),
    );
    await Promise.resolve();
    await Promise.resolve();
    return done;
  };

  it('returns the value of a promise that settles in time', async () => {
    await expect(settleWithin(Promise.resolve(7), 1_000)).resolves.toEqual({ done: true, value: 7 });
  });

  it('returns the value of a promise that settles just before the budget', async () => {
    const result = settleWithin(new Promise<number>((r) => setTimeout(() => r(3), 49)), 50);
    await jest.advanceTimersByTimeAsync(49);
    expect(await settledYet(result)).toBe(true);
    await expect(result).resolves.toEqual({ done: true, value: 3 });
  });

  it('gives up on a slow promise exactly at the budget, leaving it running', async () => {
    let finished = false;
    const slow = new Promise<number>((r) => setTimeout(() => r(1), 300)).then((v) => ((finished = true), v));
    const result = settleWithin(slow, 50);
    await jest.advanceTimersByTimeAsync(49);
    expect(await settledYet(result)).toBe(false);
    await jest.advanceTimersByTimeAsync(1);
    expect(await settledYet(result)).toBe(true);
    await expect(result).resolves.toEqual({ done: false });
    expect(finished).toBe(false);
    await jest.advanceTimersByTimeAsync(250);
    await expect(slow).resolves.toBe(1);
    expect(finished).toBe(true);
  });

  it('with a zero budget waits for nothing, not even a promise already settled', async () => {
    const result = settleWithin(new Promise(() => {}), 0);
    expect(await settledYet(result)).toBe(true);
    await expect(result).resolves.toEqual({ done: false });
    await expect(settleWithin(Promise.resolve(1), 0)).resolves.toEqual({ done: false });
    // The positive control: one millisecond is enough for a settled promise.
    await expect(settleWithin(Promise.resolve(1), 1)).resolves.toEqual({ done: true, value: 1 });
  });
});
