import { pino, type Logger, type DestinationStream } from 'pino';
import { activeTraceId } from '@dap/tracing';

export type { Logger };

/** Paths whose values are secrets; pino replaces them before a line is written. */
export const REDACT_PATHS = [
  'authorization',
  'password',
  'secret',
  'apiKey',
  'token',
  'config.password',
  'req.headers.authorization',
  'req.headers.cookie',
  'headers.authorization',
  'headers.cookie',
  '*.password',
  '*.secret',
  '*.apiKey',
  '*.token',
  '*.authorization',
];

export function createLogger(opts: { name: string; level: string; destination?: DestinationStream }): Logger {
  return pino(
    {
      name: opts.name,
      level: opts.level,
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      base: { service: opts.name },
      timestamp: pino.stdTimeFunctions.isoTime,
      // The trace of the request or event being handled, so a line can be found from a trace and back.
      mixin: () => {
        const traceId = activeTraceId();
        return traceId ? { trace_id: traceId } : {};
      },
    },
    opts.destination,
  );
}
