import { createLogger } from '@dap/logger';
import { JobRunner } from './job-runner.ts';

const logger = createLogger({ name: 'test', level: 'silent' });

function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}
const tick = () => new Promise((r) => setImmediate(r));

describe('JobRunner', () => {
  it('runs at most `concurrency` jobs at once, in order', async () => {
    const runner = new JobRunner({ concurrency: 2, logger });
    const gates = [deferred(), deferred(), deferred()];
    const started: number[] = [];
    gates.forEach((g, i) =>
      runner.enqueue(`k${i}`, async () => {
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
    runner.enqueue('a', job);
    await tick();
    runner.enqueue('a', job); // while running: once more afterwards
    runner.enqueue('a', job); // still only once more
    gate.resolve();
    await tick();
    await tick();
    expect(runs).toBe(2);
    const blocker = deferred();
    runner.enqueue('blocker', () => blocker.promise);
    runner.enqueue('b', job); // waiting behind the blocker: queued once
    runner.enqueue('b', job);
    expect(runner.queuedCount).toBe(1);
    blocker.resolve();
    await tick();
    await tick();
    expect(runs).toBe(3);
    await runner.stop();
  });

  it('keeps going after a job throws', async () => {
    const runner = new JobRunner({ concurrency: 1, logger });
    let ran = false;
    runner.enqueue('bad', async () => {
      throw new Error('boom');
    });
    runner.enqueue('good', async () => {
      ran = true;
    });
    await tick();
    await tick();
    expect(ran).toBe(true);
    await runner.stop();
  });

  it('runs nothing with concurrency 0 and nothing after stop, and stop waits for running jobs', async () => {
    const idle = new JobRunner({ concurrency: 0, logger });
    expect(idle.enqueue('a', async () => undefined)).toBe(false);
    const runner = new JobRunner({ concurrency: 1, logger });
    let finished = false;
    runner.enqueue('slow', async () => {
      await new Promise((r) => setTimeout(r, 30));
      finished = true;
    });
    await tick();
    await runner.stop();
    expect(finished).toBe(true);
    expect(runner.enqueue('late', async () => undefined)).toBe(false);
  });
});
