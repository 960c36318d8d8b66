export * from './duck.ts';
export * from './store.ts';
export * from './reader.ts';
