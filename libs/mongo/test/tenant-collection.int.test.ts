import { makeEvent, newId, type DomainEvent } from '@dap/contracts';
import { TenantCollection, type TenantDoc } from '@dap/mongo';
import { useTestDatabase } from './test-database.ts';

interface Doc extends TenantDoc {
  n: number;
}

describe('TenantCollection (on the test stack MongoDB)', () => {
  const mongo = useTestDatabase('tenant');

  it('inserts many tenants at once, each readable only by its own account, as insert() stores them', async () => {
    const written: unknown[] = [];
    const coll = new TenantCollection<Doc>(mongo.db, 'bulk', (w) => written.push(w));
    const a = newId('acct');
    const b = newId('acct');
    await coll.insertMany([
      { accountId: a, doc: { _id: 'x1', n: 1 } },
      { accountId: b, doc: { _id: 'x2', n: 2 } },
    ]);
    await coll.insert(a, { _id: 'x3', n: 3 });
    expect(await coll.findById(a, 'x1')).toMatchObject({ _id: 'x1', n: 1, accountId: a });
    expect(await coll.findById(b, 'x2')).toMatchObject({ _id: 'x2', n: 2, accountId: b });
    // Another tenant's id finds nothing (a positive control above reads the same documents).
    expect(await coll.findById(b, 'x1')).toBeNull();
    expect(await coll.findById(a, 'x2')).toBeNull();
    // The stored shape matches insert()'s: no pending events, not deleted.
    const raw = await coll.raw
      .find({}, { projection: { _id: 1, deletedAt: 1, _outbox: 1, _outboxPending: 1 } })
      .sort({ _id: 1 })
      .toArray();
    expect(raw).toEqual(['x1', 'x2', 'x3'].map((_id) => ({ _id, deletedAt: null, _outbox: [], _outboxPending: false })));
    expect(written).toEqual([]);
    await expect(coll.insertMany([])).resolves.toBeUndefined();
  });

  it('deletes outright only a document of the given account, and says whether it was there', async () => {
    const coll = new TenantCollection<Doc>(mongo.db, 'removed');
    const a = newId('acct');
    const b = newId('acct');
    await coll.insert(a, { _id: 'r1', n: 1 });
    await coll.insert(b, { _id: 'r2', n: 2 });
    // Another account's id is not found and its document stays.
    expect(await coll.delete(b, 'r1')).toBe(false);
    expect(await coll.findById(a, 'r1')).toMatchObject({ n: 1 });
    // The owner's delete removes it (no tombstone is left behind), and a second one finds nothing.
    expect(await coll.delete(a, 'r1')).toBe(true);
    expect(await coll.raw.countDocuments({ _id: 'r1' as never })).toBe(0);
    expect(await coll.delete(a, 'r1')).toBe(false);
    expect(await coll.findById(b, 'r2')).toMatchObject({ n: 2 });
    await expect(coll.delete('', 'r2')).rejects.toThrow('accountId is required');
  });

  it('inserts entries of many tenants with their events in one round trip, and reports the ones it could not store', async () => {
    const written: { id: string; events: DomainEvent[] }[] = [];
    const coll = new TenantCollection<Doc>(mongo.db, 'each', (w) => written.push({ id: w.id, events: w.events }));
    const a = newId('acct');
    const b = newId('acct');
    await coll.insert(a, { _id: 'taken', n: 0 });
    const ev = (n: number) => makeEvent('source.ready', { accountId: n === 2 ? b : a, subject: `src_${n}`, data: { id: newId('src'), rowCount: n } } as never);
    const [e1, e2, e3] = [ev(1), ev(2), ev(3)];
    const calls = { insertMany: 0 };
    const insertMany = coll.raw.insertMany.bind(coll.raw);
    coll.raw.insertMany = ((...args: Parameters<typeof insertMany>) => {
      calls.insertMany++;
      return insertMany(...args);
    }) as typeof coll.raw.insertMany;
    const outcome = await coll.insertEach([
      { accountId: a, doc: { _id: 'e1', n: 1 }, events: [e1] },
      { accountId: a, doc: { _id: 'taken', n: 9 }, events: [e3] },
      { accountId: b, doc: { _id: 'e2', n: 2 }, events: [e2] },
      { accountId: b, doc: { _id: 'e4', n: 4 }, events: [] },
    ]);
    expect(calls.insertMany).toBe(1);
    expect(outcome.map((o) => (o === null ? null : (o as { code?: number }).code))).toEqual([null, 11000, null, null]);
    // Only stored entries' events go to the relay; the refused one's never.
    expect(written).toEqual([
      { id: 'e1', events: [e1] },
      { id: 'e2', events: [e2] },
    ]);
    expect(await coll.findById(a, 'e1')).toMatchObject({ n: 1, _outboxPending: true });
    expect(await coll.findById(b, 'e2')).toMatchObject({ n: 2, _outboxPending: true });
    expect(await coll.findById(b, 'e4')).toMatchObject({ n: 4, _outboxPending: false });
    expect(await coll.findById(a, 'taken')).toMatchObject({ n: 0 });
    expect(await coll.findById(a, 'e2')).toBeNull();
    expect(await coll.insertEach([])).toEqual([]);
  });
});
