import { GROUP_BY_QUERIES, runGroupByBench } from './groupby.bench.ts';

/** Keeps the benchmark runnable: a tiny dataset, one repetition, real service and DuckDB. No timing asserted. */
describe('the group-by benchmark harness', () => {
  it('answers every query with the same rows through the API and raw DuckDB, and reports timings', async () => {
    const r = await runGroupByBench({ rows: 20_000, repetitions: 1, threads: 1, memoryLimit: '256MB' });
    expect(r.rows).toBe(20_000);
    expect(r.queries.map((q) => [q.name, q.resultRows])).toEqual([
      [GROUP_BY_QUERIES[0]!.name, 16],
      [GROUP_BY_QUERIES[1]!.name, 48],
      [GROUP_BY_QUERIES[2]!.name, 10_000],
    ]);
    for (const q of r.queries) {
      for (const t of [q.api, q.raw, q.rawHandWritten]) {
        expect(t.runsMs).toHaveLength(1);
        expect(t.medianMs).toBeGreaterThan(0);
      }
      expect(q.ratio).toBeCloseTo(q.api.medianMs / Math.min(q.raw.medianMs, q.rawHandWritten.medianMs), 1);
    }
    expect(r.fileBytes).toBeGreaterThan(0);
  });
});
