/**
 * A process's resources, opened in order and closed in reverse: every service's composition root (`index.ts`)
 * builds itself through one `Lifecycle`, so a start-up that fails part way releases what it had opened, and
 * `stop()` closes everything in the mirror order of start-up (see docs/architecture.md, "Process lifecycle").
 */

import { tracingSettingsOf } from '@dap/config';
import { createLogger, type Logger } from '@dap/logger';
import { tracingResource } from '@dap/tracing';

/** What the lifecycle reports a failed close to; the services pass their pino logger. */
export interface LifecycleLogger {
  warn(obj: object, msg: string): void;
}

type Close = () => Promise<void> | void;

export class Lifecycle {
  private readonly closers: { name: string; close: Close }[] = [];
  private stopping: Promise<void> | null = null;

  private readonly logger: LifecycleLogger;

  constructor(logger: LifecycleLogger) {
    this.logger = logger;
  }

  /** Opens one resource and registers how it closes; nothing is registered when opening throws. */
  async open<T>(name: string, open: () => Promise<T> | T, close: (resource: T) => Promise<void> | void): Promise<T> {
    if (this.stopping) throw new Error(`cannot open ${name}: the process is stopping`);
    const resource = await open();
    this.closers.push({ name, close: () => close(resource) });
    return resource;
  }

  /** Registers a close step for something already running (a timer, a started worker, a relay). */
  onStop(name: string, close: Close): void {
    if (this.stopping) throw new Error(`cannot register ${name}: the process is stopping`);
    this.closers.push({ name, close });
  }

  /**
   * Runs `task` every `intervalMs` until stop(), and once right away with `atStart`: a service's periodic
   * background work (its `workers/`). The timer does not hold the process open; a failed run is reported and
   * the next run tries again.
   */
  runEvery(name: string, intervalMs: number, task: () => Promise<unknown>, opts: { atStart?: boolean } = {}): void {
    const run = () => {
      void Promise.resolve()
        .then(task)
        .catch((err: unknown) => this.logger.warn({ err, task: name }, `${name} failed; the next run tries again`));
    };
    // Registered first: a lifecycle already stopping refuses it, and no timer is left behind.
    this.onStop(name, () => clearInterval(timer));
    const timer = setInterval(run, intervalMs);
    timer.unref();
    if (opts.atStart) run();
  }

  /**
   * Builds the service; if building throws, closes what was opened so far (in reverse) and rethrows the
   * start-up error, so a half-started process leaves no client, socket or server behind.
   */
  async start<T>(build: () => Promise<T>): Promise<T> {
    try {
      return await build();
    } catch (err) {
      await this.stop();
      throw err;
    }
  }

  /** Closes everything in reverse order of opening; a failing step is logged and the rest still close. Idempotent. */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      for (const { name, close } of this.closers.splice(0).reverse()) {
        try {
          await close();
        } catch (err) {
          this.logger.warn({ err, resource: name }, 'error while stopping');
        }
      }
    })();
    return this.stopping;
  }

  /** The names of what is open, in opening order (for tests and start-up logs). */
  get opened(): string[] {
    return this.closers.map((c) => c.name);
  }
}

/** What the first steps of a service's start need from its parsed config. */
export type ServiceStartConfig = Parameters<typeof tracingSettingsOf>[0] & { LOG_LEVEL: string };

/**
 * The first steps of every service's composition root: its logger (unless the caller brings one), its
 * lifecycle, and tracing opened first, so it closes last and the shutdown's own spans are still sent. `build`
 * opens everything else through `life`; when it throws, what it had opened is closed (docs/architecture.md).
 */
export function startService<T>(
  name: string,
  config: ServiceStartConfig,
  deps: { logger?: Logger | undefined },
  build: (life: Lifecycle, logger: Logger) => Promise<T>,
): Promise<T> {
  const logger = deps.logger ?? createLogger({ name, level: config.LOG_LEVEL });
  const life = new Lifecycle(logger);
  return life.start(async () => {
    await life.open(...tracingResource(tracingSettingsOf(config, name)));
    return build(life, logger);
  });
}
