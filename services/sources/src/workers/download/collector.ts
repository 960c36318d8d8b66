import { getHeapStatistics } from 'node:v8';

/** Growth of the thread's external memory (buffers outside V8's heap) that sets off a collection. */
export const COLLECT_EXTERNAL_BYTES = 4 * 1024 * 1024;

/**
 * The download worker's `collect` hook (downloadToFile calls it every few MiB of body): runs `gc` only once
 * the thread's external memory has grown by COLLECT_EXTERNAL_BYTES since the last collection. A compressed
 * body's zlib pieces, or slabs that a slow sink kept from being reused, still set it off at the old pace; a
 * plain body read into two reused slabs makes no such garbage, and a forced collection every 4 MiB then
 * cost about as much CPU as the client's own work on the body.
 */
export function externalGrowthCollector(gc: () => void, external: () => number = () => getHeapStatistics().external_memory): () => void {
  let base = external();
  return () => {
    if (external() - base < COLLECT_EXTERNAL_BYTES) return;
    gc();
    base = external();
  };
}
