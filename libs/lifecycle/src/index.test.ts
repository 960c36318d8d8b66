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
