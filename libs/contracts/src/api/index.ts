export * from './common.ts';
export * from './sources.api.ts';
export * from './analytics.api.ts';
export * from './models.api.ts';
export * from './webhooks.api.ts';
export * from './webhook-filter.ts';
export * from './accounts.api.ts';
export * from './operations.ts';
