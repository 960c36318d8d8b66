export * from './duck.ts';
export * from './store.ts';
