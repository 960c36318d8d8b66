import { startReceiver } from '@dap/testing';
import { Recorder, reportFigures, sleep, startSystem, type System } from './system.ts';

/**
 * Races that only show now and then, so they are tried many times here (deploy/local/faults.sh) rather than
 * once in `npm test`, where a timing-dependent failure would make the suite flaky.
 */
let sys: System;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
const rec = new Recorder();

beforeAll(async () => {
  receiver = await startReceiver();
  sys = await startSystem({ name: 'race' });
}, 180_000);

afterAll(async () => {
  await sys?.stop();
  await receiver?.close();
});

// KNOWN BUG (sources, reported by issue 10) — this test fails until it is fixed: DELETE /v1/sources/{id}
// while the source's first sync is writing its files answers 500 now and then: DatasetStore.remove's
// recursive rm (libs/datasets/src/store.ts) races the ingest writing into the same folder (ENOTEMPTY), and
// SourceService.remove (services/sources/src/domain/source.service.ts, `await store.remove(...)` after the
// soft delete) turns that into a 500 although the delete succeeded. Expected: 204 every time (e.g. rm with
// maxRetries, or log the cleanup failure: the syncer removes the data when it finds the source gone).
it('deleting a source while it syncs answers 204, never a 500 (30 tries at varied moments)', async () => {
  const account = sys.createAccount('Delete race', 'enterprise');
  const headers = { authorization: `Bearer ${account.apiKey}` };
  const rows = Array.from({ length: 2_000 }, (_, i) => ({ i, v: i * 0.5, s: `row ${i}` }));
  const statuses: number[] = [];
  for (let n = 0; n < 30; n++) {
    const created = await rec.call(sys.gw, 'POST', '/v1/sources', { headers, body: { type: 'inline', name: `race ${n}`, rows } });
    expect(created.status).toBe(201);
    await sleep((n % 10) * 15);
    statuses.push((await rec.call(sys.gw, 'DELETE', `/v1/sources/${created.json.id}`, { headers })).status);
  }
  reportFigures({ fault: 'delete while syncing ×30', requests: 60, statuses: statuses.join(' '), fiveXX: statuses.filter((s) => s >= 500).length });
  expect(statuses.filter((s) => s !== 204)).toEqual([]);
}, 120_000);
