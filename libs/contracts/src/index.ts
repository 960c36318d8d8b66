export * from './ids.ts';
export * from './plans.ts';
export * from './events.ts';
export * from './internal-auth.ts';
export * from './api/index.ts';
export * from './api-key.ts';
export * from './webhook-payload.ts';
export * from './pagination.ts';
