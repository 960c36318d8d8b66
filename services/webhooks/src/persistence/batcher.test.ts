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
    }, 2);
    const calls = ['a', 'b', 'bad', 'c', 'd'].map((x) => b.add(x).then((v) => `ok:${v}`, (e: Error) => `err:${e.message}`));
    expect(await Promise.all(calls)).toEqual(['ok:a', 'ok:b', 'err:boom', 'err:boom', 'ok:d']);
    expect(batches).toEqual([['a', 'b'], ['bad', 'c'], ['d']]);
  });
});
