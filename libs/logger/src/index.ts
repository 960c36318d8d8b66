import { pino, type Logger, type DestinationStream } from 'pino';

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
    },
    opts.destination,
  );
}
