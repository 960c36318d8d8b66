import { Batcher } from './batcher.ts';

describe('Batcher', () => {
  it('runs an idle call at once and coalesces calls made while a batch is in flight', async () => {
    const batches: number[][] = [];
    let release: () => void = () => {};
    const b = new Batcher<number, number>(async (items) => {
      batches.push(items);
      if (batches.length === 1) await new Promise<void>((r) => (release = r));
      return items.map((i) => i * 10);
    });
    const first = b.add(1);
    await Promise.resolve();
    const rest = [b.add(2), b.add(3), b.add(4)];
    release();
    expect(await first).toBe(10);
    expect(await Promise.all(rest)).toEqual([20, 30, 40]);
    expect(batches).toEqual([[1], [2, 3, 4]]);
  });

  it('caps the batch size and fails only the batch that failed', async () => {
    const batches: string[][] = [];
    const b = new Batcher<string, string>(
      async (items) => {
        batches.push(items);
        if (items.includes('bad')) throw new Error('boom');
        return items;
      },
      { maxBatch: 2 },
    );
    const calls = ['a', 'b', 'bad', 'c', 'd'].map((x) =>
      b.add(x).then(
        (v) => `ok:${v}`,
        (e: Error) => `err:${e.message}`,
      ),
    );
    expect(await Promise.all(calls)).toEqual(['ok:a', 'ok:b', 'err:boom', 'err:boom', 'ok:d']);
    expect(batches).toEqual([['a', 'b'], ['bad', 'c'], ['d']]);
  });

  describe('with a linger', () => {
    // Timers and performance.now() are faked; microtasks run as usual (a ready batch goes in one).
    beforeEach(() => jest.useFakeTimers({ doNotFake: ['queueMicrotask', 'nextTick'] }));
    afterEach(() => jest.useRealTimers());

    it('gathers calls until the oldest has waited that long, and sends a full batch at once', async () => {
      const batches: number[][] = [];
      const b = new Batcher<number, number>(async (items) => (batches.push(items), items), { maxBatch: 3, lingerMs: 100 });
      const first = b.add(1);
      await jest.advanceTimersByTimeAsync(60);
      const second = b.add(2);
      await jest.advanceTimersByTimeAsync(39);
      expect(batches).toEqual([]);
      // Timed from the first call: one timed from the last would wait until 160 ms.
      await jest.advanceTimersByTimeAsync(1);
      expect(batches).toEqual([[1, 2]]);
      expect(await Promise.all([first, second])).toEqual([1, 2]);

      // Full: no waiting for the linger.
      expect(await Promise.all([b.add(3), b.add(4), b.add(5)])).toEqual([3, 4, 5]);
      expect(batches).toEqual([
        [1, 2],
        [3, 4, 5],
      ]);
    });

    it('sends a call made while a batch is written with the next batch, once it is old enough', async () => {
      const batches: number[][] = [];
      let release: () => void = () => {};
      const b = new Batcher<number, number>(
        async (items) => {
          batches.push(items);
          if (batches.length === 1) await new Promise<void>((r) => (release = r));
          return items;
        },
        { lingerMs: 100 },
      );
      const first = b.add(1);
      await jest.advanceTimersByTimeAsync(100);
      expect(batches).toEqual([[1]]);
      const later = [b.add(2), b.add(3)];
      release();
      await first;
      await jest.advanceTimersByTimeAsync(99);
      expect(batches).toEqual([[1]]);
      await jest.advanceTimersByTimeAsync(1);
      expect(batches).toEqual([[1], [2, 3]]);
      expect(await Promise.all(later)).toEqual([2, 3]);
    });
  });
});
