export * from './kinds.ts';
export * from './codes.ts';
export * from './domain-error.ts';
export * from './validation.ts';
