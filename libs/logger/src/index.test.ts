import { context, extractContext, startTracing } from '@dap/tracing';
import { createLogger } from './index.ts';

describe('log lines and traces', () => {
  const tracing = startTracing({ serviceName: 'test', sampleRatio: 1 });
  afterAll(() => tracing.shutdown());

  it('carry the trace id of the span active where they are written, and none elsewhere', () => {
    const lines: Record<string, unknown>[] = [];
    const logger = createLogger({ name: 'test', level: 'info', destination: { write: (l: string) => void lines.push(JSON.parse(l)) } });
    context.with(extractContext({ traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' }), () => logger.info('inside'));
    logger.info('outside');
    expect(lines.map((l) => [l.msg, l.trace_id])).toEqual([
      ['inside', '4bf92f3577b34da6a3ce929d0e0e4736'],
      ['outside', undefined],
    ]);
  });
});
