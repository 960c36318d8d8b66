export * from './errors.ts';
export * from './validation.ts';
export * from './app.ts';
export * from './server.ts';
export * from './lifecycle.ts';
export * from './metrics.ts';
export * from './linger.ts';
export * from './tracing.ts';
