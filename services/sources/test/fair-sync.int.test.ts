import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { newId } from '@dap/contracts';
import { connectMongo } from '@dap/mongo';
import { stackEnv, uniqueSuffix, waitFor } from '@dap/testing';
import { SourceRepository } from '../src/persistence/source.repository.ts';
import { startHarness, type Harness } from './harness.ts';

/**
 * Fair syncs across tenants: account A's slow sources (URL downloads held open by the file server, a
 * deterministic gate) must not keep account B's inline source waiting. Two sync slots, one per account.
 */
let h: Harness;
let files: Server;
let filesUrl = '';
const CSV = 'id,amount\n1,2.5\n2,3.5\n';
/** Requests per path; the first (the create-time check) is answered, later ones (sync downloads) are held. */
const seen = new Map<string, number>();
const held: ServerResponse[] = [];

function serve(req: IncomingMessage, res: ServerResponse): void {
  const path = (req.url ?? '').split('?')[0]!;
  const n = (seen.get(path) ?? 0) + 1;
  seen.set(path, n);
  if (n === 1) return void res.writeHead(200, { 'content-type': 'text/csv' }).end(CSV);
  held.push(res);
}

function releaseAll(): void {
  for (const res of held.splice(0)) res.writeHead(200, { 'content-type': 'text/csv' }).end(CSV);
}

beforeAll(async () => {
  files = createServer(serve);
  await new Promise<void>((r) => files.listen(0, '127.0.0.1', () => r()));
  filesUrl = `http://127.0.0.1:${(files.address() as AddressInfo).port}`;
  h = await startHarness({ SYNC_CONCURRENCY: '2', SYNC_ACCOUNT_CONCURRENCY: '1' });
});

afterAll(async () => {
  releaseAll();
  await h?.stop();
  files.closeAllConnections();
  await new Promise((r) => files.close(r));
});

it("account A's slow syncs leave a slot for account B: B's inline source is ready while all of A's are still downloading", async () => {
  const accountA = newId('acct');
  const accountB = newId('acct');
  const slow: string[] = [];
  for (let i = 0; i < 4; i++) {
    const res = await h.api('POST', '/v1/sources', { account: accountA, body: { type: 'url', name: `slow ${i}`, url: `${filesUrl}/slow/${i}.csv` } });
    expect(res.status).toBe(201);
    slow.push(res.body.id as string);
  }
  // A sync of A's is downloading (held by the server): the gate is closed on a running sync.
  await waitFor(() => held.length >= 1 || null, { timeoutMs: 10_000, what: "one of A's downloads to arrive" });

  const b = await h.api('POST', '/v1/sources', { account: accountB, body: { type: 'inline', name: 'quick', rows: [{ x: 1 }, { x: 2 }] } });
  expect(b.status).toBe(201);
  const ready = await h.settled(b.body.id as string, accountB, 10_000);
  expect(ready).toMatchObject({ status: 'ready', rowCount: 2 });

  // Still nothing of A's has finished, and A never held more than its one slot.
  expect(held.length).toBe(1);
  for (const id of slow) expect((await h.api('GET', `/v1/sources/${id}`, { account: accountA })).body.status).not.toBe('ready');

  // Positive control: once the server answers, every one of A's sources syncs, one at a time.
  const done = await waitFor(
    async () => {
      releaseAll();
      const all = await Promise.all(slow.map(async (id) => (await h.api('GET', `/v1/sources/${id}`, { account: accountA })).body));
      return all.every((s) => s.status === 'ready') ? all : null;
    },
    { timeoutMs: 20_000, what: "A's sources to be ready", intervalMs: 50 },
  );
  expect(done.map((s) => s.rowCount)).toEqual([2, 2, 2, 2]);
});

it("the crash-recovery sweep finds every account's waiting sources, however long one account's backlog", async () => {
  const mongo = await connectMongo(stackEnv().MONGO_URL, `src_sweep_${uniqueSuffix()}`);
  try {
    const repo = new SourceRepository(mongo.db, () => undefined);
    const [busy, quiet] = [newId('acct'), newId('acct')];
    const now = new Date();
    const doc = (accountId: string, status: string, extra: Record<string, unknown> = {}) => ({ _id: newId('src'), accountId, status, deletedAt: null, ...extra });
    // The busy account's 150 waiting sources are all older than the quiet account's one.
    const backlog = Array.from({ length: 150 }, () => doc(busy, 'pending'));
    const expired = doc(busy, 'syncing', { syncLeaseUntil: new Date(now.getTime() - 1) });
    const live = doc(busy, 'syncing', { syncLeaseUntil: new Date(now.getTime() + 60_000) });
    const ready = doc(quiet, 'ready');
    const waiting = doc(quiet, 'pending');
    await repo.coll.raw.insertMany([...backlog, expired, live, ready, waiting] as never[]);

    const found = await repo.findUnfinishedAcrossAccounts(now, 20);
    const ofBusy = found.filter((f) => f.accountId === busy).map((f) => f.id);
    expect(found.filter((f) => f.accountId === quiet)).toEqual([{ accountId: quiet, id: waiting._id }]);
    // Positive control: the busy account's oldest ones are found too, at most 20, and a live lease is left alone.
    expect(ofBusy).toEqual(backlog.slice(0, 20).map((d) => d._id));
    expect(ofBusy).not.toContain(live._id);
  } finally {
    await mongo.db.dropDatabase().catch(() => undefined);
    await mongo.close();
  }
});
