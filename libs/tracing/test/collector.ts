import { startReceiver } from '@dap/testing';
import { startTracing } from '../src/index.ts';

export type TracingCollector = Awaited<ReturnType<typeof startTracingCollector>>;

/** For tests: tracing on, exporting every span to a local recording server; flush, then read `collector.received`. */
export async function startTracingCollector(serviceName = 'test') {
  const collector = await startReceiver();
  const tracing = startTracing({ serviceName, endpoint: collector.url, sampleRatio: 1, exportDelayMs: 60_000 });
  return {
    collector,
    tracing,
    close: async () => {
      await tracing.shutdown();
      await collector.close();
    },
  };
}
