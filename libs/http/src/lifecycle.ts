import type { Logger } from '@dap/logger';

/**
 * Graceful shutdown on SIGTERM/SIGINT: runs the steps in order (stop accepting, drain, commit, close) and
 * exits 0, or exits 1 if they take longer than the deadline.
 */
export function installShutdown(logger: Logger, stop: () => Promise<void>, deadlineMs = 10_000): void {
  let stopping = false;
  const onSignal = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    setTimeout(() => {
      logger.error('shutdown deadline passed; exiting');
      process.exit(1);
    }, deadlineMs).unref();
    stop().then(
      () => process.exit(0),
      (err) => {
        logger.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => onSignal('SIGTERM'));
  process.on('SIGINT', () => onSignal('SIGINT'));
}
