import { createLogger } from '@dap/logger';
import { JobRunner } from './job-runner.ts';

const logger = createLogger({ name: 'test', level: 'silent' });

function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}
const tick = () => new Promise((r) => setImmediate(r));

/** Jobs that record their start and then wait for their gate (`gates.get(key).resolve()`). */
function gatedJobs() {
  const gates = new Map<string, ReturnType<typeof deferred>>();
  const started: string[] = [];
  const job = (key: string) => async () => {
    started.push(key);
    const gate = deferred();
    gates.set(key, gate);
    await gate.promise;
  };
  return { gates, started, job };
}

describe('JobRunner', () => {
  it('runs at most `concurrency` jobs at once, in order', async () => {
    const runner = new JobRunner({ concurrency: 2, logger });
    const gates = [deferred(), deferred(), deferred()];
    const started: number[] = [];
    gates.forEach((g, i) =>
      runner.enqueue('g', `k${i}`, async () => {
        started.push(i);
        await g.promise;
      }),
    );
    await tick();
    expect(started).toEqual([0, 1]);
    expect(runner.activeCount).toBe(2);
    expect(runner.queuedCount).toBe(1);
    gates[0]!.resolve();
    await tick();
    expect(started).toEqual([0, 1, 2]);
    gates[1]!.resolve();
    gates[2]!.resolve();
    await runner.stop();
    expect(runner.activeCount).toBe(0);
  });

  it('queues a key once, and runs it again when it was enqueued while running', async () => {
    const runner = new JobRunner({ concurrency: 1, logger });
    const gate = deferred();
    let runs = 0;
    const job = async () => {
      runs++;
      if (runs === 1) await gate.promise;
    };
    runner.enqueue('g', 'a', job);
    await tick();
    runner.enqueue('g', 'a', job); // while running: once more afterwards
    runner.enqueue('g', 'a', job); // still only once more
    gate.resolve();
    await tick();
    await tick();
    expect(runs).toBe(2);
    const blocker = deferred();
    runner.enqueue('g', 'blocker', () => blocker.promise);
    runner.enqueue('g', 'b', job); // waiting behind the blocker: queued once
    runner.enqueue('g', 'b', job);
    expect(runner.queuedCount).toBe(1);
    blocker.resolve();
    await tick();
    await tick();
    expect(runs).toBe(3);
    await runner.stop();
  });

  it('takes accounts in turn and caps each: a backlog in account A delays account B by no job at all', async () => {
    const runner = new JobRunner({ concurrency: 2, perGroup: 1, logger });
    const { gates, started, job } = gatedJobs();
    for (let i = 0; i < 5; i++) runner.enqueue('A', `A${i}`, job(`A${i}`));
    await tick();
    // A's cap keeps the second slot free (positive control: A0 did start).
    expect(started).toEqual(['A0']);
    runner.enqueue('B', 'B0', job('B0'));
    await tick();
    expect(started).toEqual(['A0', 'B0']);
    gates.get('B0')!.resolve();
    await tick();
    await tick();
    // B is done and nobody else waits: A's next job takes the slot, but A still holds one at a time.
    expect(started).toEqual(['A0', 'B0']);
    gates.get('A0')!.resolve();
    await tick();
    await tick();
    expect(started).toEqual(['A0', 'B0', 'A1']);
    for (const g of gates.values()) g.resolve();
    await runner.stop();
  });

  it("without a cap, a waiting account gets the very next free slot, ahead of the busy account's backlog", async () => {
    const runner = new JobRunner({ concurrency: 2, perGroup: 2, logger });
    const { gates, started, job } = gatedJobs();
    for (let i = 0; i < 5; i++) runner.enqueue('A', `A${i}`, job(`A${i}`));
    runner.enqueue('B', 'B0', job('B0'));
    runner.enqueue('C', 'C0', job('C0'));
    await tick();
    expect(started).toEqual(['A0', 'A1']);
    expect(runner.queuedCount).toBe(5);
    // One A sync ends: B, then C, get the slots before A's third job (at most one sync's wait).
    gates.get('A0')!.resolve();
    await tick();
    await tick();
    expect(started).toEqual(['A0', 'A1', 'B0']);
    gates.get('A1')!.resolve();
    await tick();
    await tick();
    expect(started).toEqual(['A0', 'A1', 'B0', 'C0']);
    gates.get('B0')!.resolve();
    await tick();
    await tick();
    expect(started).toEqual(['A0', 'A1', 'B0', 'C0', 'A2']);
    for (const g of gates.values()) g.resolve();
    await runner.stop();
  });

  it('keeps going after a job throws', async () => {
    const runner = new JobRunner({ concurrency: 1, logger });
    let ran = false;
    runner.enqueue('g', 'bad', async () => {
      throw new Error('boom');
    });
    runner.enqueue('g', 'good', async () => {
      ran = true;
    });
    await tick();
    await tick();
    expect(ran).toBe(true);
    await runner.stop();
  });

  it('runs nothing with concurrency 0 and nothing after stop, and stop waits for running jobs', async () => {
    const idle = new JobRunner({ concurrency: 0, logger });
    expect(idle.enqueue('g', 'a', async () => undefined)).toBe(false);
    const runner = new JobRunner({ concurrency: 1, logger });
    let finished = false;
    const gate = deferred();
    runner.enqueue('g', 'slow', async () => {
      await gate.promise;
      finished = true;
    });
    await tick();
    let stopped = false;
    const stopping = runner.stop().then(() => (stopped = true));
    await tick();
    await tick();
    expect(stopped).toBe(false);
    gate.resolve();
    await stopping;
    expect(finished).toBe(true);
    expect(runner.enqueue('g', 'late', async () => undefined)).toBe(false);
  });
});
