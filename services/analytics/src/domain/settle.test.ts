import { settleWithin } from './settle.ts';

describe('settleWithin', () => {
  it('returns the value of a promise that settles in time', async () => {
    await expect(settleWithin(Promise.resolve(7), 1_000)).resolves.toEqual({ done: true, value: 7 });
  });

  it('gives up on a slow promise after the budget, leaving it running', async () => {
    let finished = false;
    const slow = new Promise<number>((r) => setTimeout(() => r(1), 300)).then((v) => ((finished = true), v));
    const started = Date.now();
    await expect(settleWithin(slow, 50)).resolves.toEqual({ done: false });
    expect(Date.now() - started).toBeLessThan(250);
    expect(finished).toBe(false);
    await expect(slow).resolves.toBe(1);
  });

  it('with a zero budget only reports what is already settled', async () => {
    await expect(settleWithin(new Promise(() => {}), 0)).resolves.toEqual({ done: false });
  });
});
