import { existsSync } from 'node:fs';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { newId } from '@dap/contracts';
import { DatasetStore } from './store.ts';
import { sqlLiteral } from './duck.ts';

const GRACE = 60_000;
let root: string;
let store: DatasetStore;
let clock = 1_700_000_000_000;
const accountId = newId('acct');

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'dap-datasets-'));
  store = await DatasetStore.open(root, { memoryLimit: '128MB', threads: 1 }, { graceMs: GRACE, now: () => clock });
});

afterAll(async () => {
  store.duck.close();
  await rm(root, { recursive: true, force: true });
});

async function sync(sourceId: string, n: number): Promise<string> {
  await store.stage(
    accountId,
    sourceId,
    'ndjson',
    Array.from({ length: n }, (_, i) => `{"i":${i}}\n`),
  );
  return (await store.ingest(accountId, sourceId, 'ndjson')).file;
}

const rowsIn = async (file: string) => Number((await store.duck.run(`SELECT count(*) AS n FROM read_parquet(${sqlLiteral(file)})`)).rows[0]!.n);

describe('DatasetStore: replaced files outlive the readers that resolved them', () => {
  it('keeps a replaced file readable for the grace period, then the sweep removes it (and only it)', async () => {
    const sourceId = newId('src');
    const first = await sync(sourceId, 3);
    clock += 1_000;
    const second = await sync(sourceId, 5);
    expect(await store.currentFile(accountId, sourceId)).toBe(second);
    // A reader that resolved the first file before the swap still reads it, whole.
    expect(existsSync(first)).toBe(true);
    expect(await rowsIn(first)).toBe(3);

    clock += GRACE - 1;
    expect(await store.sweepRetired()).toBe(0);
    expect(existsSync(first)).toBe(true);
    clock += 1;
    expect(await store.sweepRetired()).toBe(1);
    expect(existsSync(first)).toBe(false);
    expect(await rowsIn(second)).toBe(5);
    expect((await readdir(store.dir(accountId, sourceId))).filter((f) => f.includes('.parquet'))).toEqual([basename(second)]);
  });

  it('counts each file from its own replacement, and a later publish also removes what has expired', async () => {
    const sourceId = newId('src');
    const a = await sync(sourceId, 1);
    clock += 10_000;
    const b = await sync(sourceId, 2); // a retired now
    clock += 30_000;
    const c = await sync(sourceId, 3); // b retired now; a has 30 s left
    expect([existsSync(a), existsSync(b), existsSync(c)]).toEqual([true, true, true]);
    clock += 30_000;
    const d = await sync(sourceId, 4); // a expires now; b has 30 s left
    expect([existsSync(a), existsSync(b), existsSync(c), existsSync(d)]).toEqual([false, true, true, true]);
    clock += 30_000;
    await store.sweepRetired();
    expect([existsSync(b), existsSync(c), existsSync(d)]).toEqual([false, true, true]);
  });

  it('removes the leftovers of a failed sync at once but leaves retired files to their grace period', async () => {
    const sourceId = newId('src');
    const old = await sync(sourceId, 1);
    clock += 1_000;
    const current = await sync(sourceId, 2);
    const leftover = store.newDataFile(accountId, sourceId);
    await writeFile(leftover, 'half a file');
    await store.removeUnpublished(accountId, sourceId);
    expect(existsSync(leftover)).toBe(false);
    expect(existsSync(old)).toBe(true);
    expect(existsSync(current)).toBe(true);
  });

  it('never removes the current file, even one another writer had retired', async () => {
    const sourceId = newId('src');
    await sync(sourceId, 1);
    // A writer whose lease ran out still loads while a new one publishes: its file gets retired, then published.
    const late = store.newDataFile(accountId, sourceId);
    await store.duck.run(`COPY (SELECT 7 AS i) TO ${sqlLiteral(late)} (FORMAT parquet)`);
    const next = await sync(sourceId, 2);
    expect(existsSync(`${late}.retired`)).toBe(true);
    clock += 1_000;
    await store.publish(accountId, sourceId, late);
    clock += GRACE;
    await store.sweepRetired();
    expect(await store.currentFile(accountId, sourceId)).toBe(late);
    expect(await rowsIn(late)).toBe(1);
    expect(existsSync(next)).toBe(false); // positive control: what it replaced did go
  });

  it('with no grace period, removes the replaced file at publish', async () => {
    const eager = new DatasetStore(root, store.duck, { graceMs: 0, now: () => clock });
    const sourceId = newId('src');
    await eager.stage(accountId, sourceId, 'ndjson', '{"i":1}\n');
    const first = (await eager.ingest(accountId, sourceId, 'ndjson')).file;
    const second = (await eager.ingest(accountId, sourceId, 'ndjson')).file;
    expect([existsSync(first), existsSync(second)]).toEqual([false, true]);
  });
});
