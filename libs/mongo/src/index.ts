export * from './client.ts';
export * from './tenant-collection.ts';
export * from './outbox.ts';
export * from './serial-pass.ts';
export * from './source-projection.ts';
export * from './resource.ts';
export * from './repository.ts';
