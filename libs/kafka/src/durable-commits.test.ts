import { createLogger } from '@dap/logger';
import { DurableCommits, type PartitionOffset } from './durable-commits.ts';

const silent = createLogger({ name: 'durable-commits-test', level: 'silent' });

function deferred() {
  let resolve!: () => void;
  let reject!: (err: Error) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

function tracker(maxPendingPerPartition = 100) {
  const commits: PartitionOffset[][] = [];
  const seeks: PartitionOffset[] = [];
  const c = new DurableCommits({
    commit: async (offsets) => void commits.push(offsets),
    seek: (at) => void seeks.push(at),
    logger: silent,
    maxPendingPerPartition,
    commitEveryMs: 10,
  });
  const chunk = (partition: number, from: number, last: number) => ({ topic: 't', partition, from: String(from), last: String(last), count: last - from + 1 });
  return { c, commits, seeks, chunk };
}

afterEach(() => jest.useRealTimers());

describe('DurableCommits', () => {
  beforeEach(() => jest.useFakeTimers());

  it('commits a partition only up to the last chunk whose events, and every earlier chunk’s, are durable', async () => {
    const { c, commits, chunk } = tracker();
    const [a, b, z] = [deferred(), deferred(), deferred()];
    await c.add(c.generation, chunk(0, 0, 9), a.promise);
    await c.add(c.generation, chunk(0, 10, 19), b.promise);
    await c.add(c.generation, chunk(1, 5, 5), z.promise);
    b.resolve(); // the later chunk first: nothing may be committed past the earlier one
    await jest.advanceTimersByTimeAsync(50);
    expect(commits).toEqual([]);
    a.resolve();
    z.resolve();
    await jest.advanceTimersByTimeAsync(50);
    expect(commits).toEqual([
      [
        { topic: 't', partition: 0, offset: '20' },
        { topic: 't', partition: 1, offset: '6' },
      ],
    ]);
  });

  it('reads a partition again from the first chunk that was not stored, and commits the chunks before it', async () => {
    const { c, commits, seeks, chunk } = tracker();
    const [a, b, d] = [deferred(), deferred(), deferred()];
    await c.add(c.generation, chunk(0, 0, 9), a.promise);
    await c.add(c.generation, chunk(0, 10, 19), b.promise);
    await c.add(c.generation, chunk(0, 20, 29), d.promise);
    b.reject(new Error('not stored'));
    d.resolve();
    a.resolve();
    await jest.advanceTimersByTimeAsync(50);
    expect(seeks).toEqual([{ topic: 't', partition: 0, offset: '10' }]);
    expect(commits).toEqual([[{ topic: 't', partition: 0, offset: '10' }]]);
  });

  it('forgets what was taken before a rebalance: the new generation reads it again from the committed offset', async () => {
    const { c, commits, chunk } = tracker();
    const old = deferred();
    const before = c.generation;
    await c.add(before, chunk(0, 0, 9), old.promise);
    c.reset();
    await c.add(before, chunk(0, 10, 19), Promise.resolve()); // a chunk of the old generation still finishing
    old.resolve();
    await jest.advanceTimersByTimeAsync(50);
    expect(commits).toEqual([]);
    // Positive control: the new generation's chunks commit.
    await c.add(c.generation, chunk(0, 0, 9), Promise.resolve());
    await jest.advanceTimersByTimeAsync(50);
    expect(commits).toEqual([[{ topic: 't', partition: 0, offset: '10' }]]);
  });

  it('holds the consumer back while a partition has too many events not yet durable', async () => {
    const { c, chunk } = tracker(15);
    const a = deferred();
    await c.add(c.generation, chunk(0, 0, 9), a.promise);
    let taken = false;
    const beats: number[] = [];
    const second = c.add(c.generation, chunk(0, 10, 19), Promise.resolve(), async () => void beats.push(Date.now())).then(() => (taken = true));
    await jest.advanceTimersByTimeAsync(2_500);
    expect(taken).toBe(false);
    expect(beats.length).toBe(2); // the group keeps hearing from it while it waits
    a.resolve();
    await jest.advanceTimersByTimeAsync(1);
    await second;
    expect(taken).toBe(true);
  });

  it('drains: waits for what was taken, commits it, and then stops', async () => {
    const { c, commits, chunk } = tracker();
    const a = deferred();
    await c.add(c.generation, chunk(0, 0, 9), a.promise);
    const drained = c.drain(5_000);
    await jest.advanceTimersByTimeAsync(100);
    a.resolve();
    await jest.advanceTimersByTimeAsync(100);
    await drained;
    expect(commits).toEqual([[{ topic: 't', partition: 0, offset: '10' }]]);
    await c.close();
    await c.add(c.generation - 1, chunk(0, 10, 19), Promise.resolve());
    await jest.advanceTimersByTimeAsync(100);
    expect(commits).toHaveLength(1);
  });
});
