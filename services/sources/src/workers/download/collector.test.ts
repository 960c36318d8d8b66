import { COLLECT_EXTERNAL_BYTES, externalGrowthCollector } from './collector.ts';

describe('externalGrowthCollector', () => {
  it('collects only once external memory has grown by COLLECT_EXTERNAL_BYTES since the last collection', () => {
    let external = 10 * COLLECT_EXTERNAL_BYTES;
    let collections = 0;
    // A collection frees all but 1 MiB of what was made since the last one.
    const collect = externalGrowthCollector(
      () => {
        collections++;
        external = 10 * COLLECT_EXTERNAL_BYTES + 1024 * 1024;
      },
      () => external,
    );
    /** Garbage one byte under the threshold: no collection; at the threshold: one more. */
    const growPastThreshold = () => {
      const before = collections;
      external += COLLECT_EXTERNAL_BYTES - 1;
      collect();
      expect(collections).toBe(before);
      external += 1;
      collect();
      expect(collections).toBe(before + 1);
    };
    // Reused slabs: nothing grows, nothing is collected however often it is asked.
    for (let i = 0; i < 30; i++) collect();
    expect(collections).toBe(0);
    growPastThreshold();
    // Measured from what was left after it (1 MiB more than before).
    growPastThreshold();
    expect(collections).toBe(2);
  });

  it('reads the thread’s own external memory by default', () => {
    let collections = 0;
    const collect = externalGrowthCollector(() => collections++);
    const garbage = Array.from({ length: 5 }, () => Buffer.allocUnsafeSlow(1024 * 1024));
    collect();
    expect(collections).toBe(1);
    expect(garbage).toHaveLength(5);
  });
});
