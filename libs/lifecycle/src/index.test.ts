import { createLogger } from '@dap/logger';
import { Lifecycle, startService } from './index.ts';

function recorder() {
  const events: string[] = [];
  const warnings: { resource?: string }[] = [];
  const life = new Lifecycle({ warn: (obj) => void warnings.push(obj as { resource?: string }) });
  const res = (name: string) =>
    life.open(
      name,
      async () => (events.push(`open ${name}`), name),
      async (r) => void events.push(`close ${r}`),
    );
  return { events, warnings, life, res };
}

describe('Lifecycle', () => {
  it('opens in order and closes in reverse', async () => {
    const { events, life, res } = recorder();
    await life.start(async () => {
      await res('mongo');
      await res('kafka');
      life.onStop('timer', () => void events.push('close timer'));
      await res('server');
    });
    expect(life.opened).toEqual(['mongo', 'kafka', 'timer', 'server']);
    await life.stop();
    expect(events).toEqual(['open mongo', 'open kafka', 'open server', 'close server', 'close timer', 'close kafka', 'close mongo']);
  });

  it('rolls back what was opened when start-up fails part way, and rethrows the start-up error', async () => {
    const { events, life, res } = recorder();
    const failure = new Error('kafka unreachable');
    await expect(
      life.start(async () => {
        await res('mongo');
        await res('server');
        await life.open(
          'kafka',
          async () => {
            throw failure;
          },
          () => void events.push('close kafka'),
        );
        await res('never');
      }),
    ).rejects.toBe(failure);
    // The failed resource registered nothing, so only what opened is closed, in reverse.
    expect(events).toEqual(['open mongo', 'open server', 'close server', 'close mongo']);
    expect(life.opened).toEqual([]);
  });

  it('closes the rest when one close step fails, and reports the failure', async () => {
    const { events, warnings, life, res } = recorder();
    await res('mongo');
    life.onStop('relay', () => {
      throw new Error('flush failed');
    });
    await res('server');
    await life.stop();
    expect(events).toEqual(['open mongo', 'open server', 'close server', 'close mongo']);
    expect(warnings.map((w) => w.resource)).toEqual(['relay']);
  });

  it('stops once however often stop() is called, and refuses to open while stopping', async () => {
    const { events, life, res } = recorder();
    await res('mongo');
    await Promise.all([life.stop(), life.stop()]);
    await life.stop();
    expect(events.filter((e) => e === 'close mongo')).toHaveLength(1);
    await expect(res('late')).rejects.toThrow('the process is stopping');
    expect(events).not.toContain('open late');
  });
});

describe('Lifecycle.runEvery', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  /** Lets the promise chain of a run settle under fake timers. */
  const settle = async () => {
    for (let i = 0; i < 5; i++) await Promise.resolve();
  };

  it('runs at each interval, and at once with atStart, until stop()', async () => {
    const { life } = recorder();
    const runs: string[] = [];
    life.runEvery('sweep', 1_000, async () => void runs.push('sweep'), { atStart: true });
    life.runEvery('later', 1_000, async () => void runs.push('later'));
    await settle();
    expect(runs).toEqual(['sweep']);
    expect(life.opened).toEqual(['sweep', 'later']);

    await jest.advanceTimersByTimeAsync(2_000);
    expect(runs.filter((r) => r === 'sweep')).toHaveLength(3);
    expect(runs.filter((r) => r === 'later')).toHaveLength(2);

    await life.stop();
    await jest.advanceTimersByTimeAsync(5_000);
    // The runs seen before stop() are the positive control: after it, no timer fires.
    expect(runs).toHaveLength(5);
    expect(jest.getTimerCount()).toBe(0);
  });

  it('reports a failed run, by name, and the next run still happens', async () => {
    const { life, warnings } = recorder();
    let calls = 0;
    life.runEvery('retired-file sweep', 1_000, async () => {
      if (++calls === 1) throw new Error('disk busy');
    });
    await jest.advanceTimersByTimeAsync(1_000);
    await settle();
    expect(warnings).toEqual([expect.objectContaining({ task: 'retired-file sweep', err: expect.objectContaining({ message: 'disk busy' }) })]);
    await jest.advanceTimersByTimeAsync(1_000);
    expect(calls).toBe(2);
    expect(warnings).toHaveLength(1);
    await life.stop();
  });

  it('refuses a task once the process is stopping, and leaves no timer behind', async () => {
    const { life } = recorder();
    life.runEvery('before', 1_000, async () => {});
    expect(jest.getTimerCount()).toBe(1); // positive control: a task's timer is counted
    await life.stop();
    expect(() => life.runEvery('late', 1_000, async () => {})).toThrow('the process is stopping');
    expect(jest.getTimerCount()).toBe(0);
  });

  it('does not keep the process open', () => {
    jest.useRealTimers();
    const { life } = recorder();
    const setIntervalSpy = jest.spyOn(global, 'setInterval');
    try {
      life.runEvery('sweep', 60_000, async () => {});
      const timer = setIntervalSpy.mock.results[0]!.value as NodeJS.Timeout;
      expect(timer.hasRef()).toBe(false);
    } finally {
      setIntervalSpy.mockRestore();
      void life.stop();
    }
  });
});

describe('startService', () => {
  const config = { LOG_LEVEL: 'silent', OTEL_TRACES_SAMPLER_ARG: 1, OTEL_BSP_SCHEDULE_DELAY: 5_000 };
  const logger = createLogger({ name: 'start-service-test', level: 'silent' });

  it('opens tracing first and hands the build its lifecycle and the given logger', async () => {
    let seen: { opened: string[]; logger: unknown } | null = null;
    let life: Lifecycle | null = null;
    const result = await startService('svc', config, { logger }, async (l, log) => {
      life = l;
      l.onStop('server', () => {});
      seen = { opened: l.opened, logger: log };
      return 'built';
    });
    expect(result).toBe('built');
    expect(seen).toEqual({ opened: ['tracing', 'server'], logger });
    await life!.stop();
    expect(life!.opened).toEqual([]);
  });

  it('closes what the build opened, tracing last, and rethrows when the build fails', async () => {
    const closed: string[] = [];
    let life: Lifecycle | null = null;
    const failure = new Error('kafka unreachable');
    await expect(
      startService('svc', config, { logger }, async (l) => {
        life = l;
        l.onStop('mongodb', () => void closed.push('mongodb'));
        throw failure;
      }),
    ).rejects.toBe(failure);
    expect(closed).toEqual(['mongodb']);
    expect(life!.opened).toEqual([]);
  });
});
