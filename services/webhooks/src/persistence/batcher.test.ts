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
    const b = new Batcher<string, string>(async (items) => {
      batches.push(items);
      if (items.includes('bad')) throw new Error('boom');
      return items;
    }, { maxBatch: 2 });
    const calls = ['a', 'b', 'bad', 'c', 'd'].map((x) => b.add(x).then((v) => `ok:${v}`, (e: Error) => `err:${e.message}`));
    expect(await Promise.all(calls)).toEqual(['ok:a', 'ok:b', 'err:boom', 'err:boom', 'ok:d']);
    expect(batches).toEqual([['a', 'b'], ['bad', 'c'], ['d']]);
  });

  it('with a linger, gathers calls until the oldest has waited that long, and sends a full batch at once', async () => {
    const batches: Array<{ items: number[]; at: number }> = [];
    const b = new Batcher<number, number>(
      async (items) => {
        batches.push({ items, at: performance.now() });
        return items;
      },
      { maxBatch: 3, lingerMs: 80 },
    );
    const t0 = performance.now();
    const first = b.add(1);
    await new Promise((r) => setTimeout(r, 20));
    const second = b.add(2);
    expect(await Promise.all([first, second])).toEqual([1, 2]);
    expect(batches.map((x) => x.items)).toEqual([[1, 2]]);
    // Timed from the first call, not the last.
    expect(batches[0]!.at - t0).toBeGreaterThanOrEqual(75);
    expect(batches[0]!.at - t0).toBeLessThan(1_000);

    const t1 = performance.now();
    expect(await Promise.all([b.add(3), b.add(4), b.add(5)])).toEqual([3, 4, 5]);
    expect(batches[1]!.items).toEqual([3, 4, 5]);
    expect(batches[1]!.at - t1).toBeLessThan(40);
  });

  it('with a linger, a call made while a batch is written goes with the next once it is old enough', async () => {
    const batches: number[][] = [];
    let release: () => void = () => {};
    const b = new Batcher<number, number>(
      async (items) => {
        batches.push(items);
        if (batches.length === 1) await new Promise<void>((r) => (release = r));
        return items;
      },
      { lingerMs: 30 },
    );
    const first = b.add(1);
    await new Promise((r) => setTimeout(r, 60));
    expect(batches).toEqual([[1]]);
    const later = [b.add(2), b.add(3)];
    release();
    await first;
    await new Promise((r) => setTimeout(r, 5));
    expect(batches).toEqual([[1]]);
    expect(await Promise.all(later)).toEqual([2, 3]);
    expect(batches).toEqual([[1], [2, 3]]);
  });
});
