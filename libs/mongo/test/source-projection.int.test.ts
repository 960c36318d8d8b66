import { makeEvent, newId, type DomainEvent } from '@dap/contracts';
import { SOURCE_PROJECTIONS_COLLECTION, SourceProjectionRepository } from '@dap/mongo';
import { useTestDatabase } from './test-database.ts';

const schema = [
  { name: 'n', type: 'integer' },
  { name: 'v', type: 'someday' },
];

function sourceEvents(accountId: string, id: string) {
  const fields = { accountId, subject: id };
  // Made in this order, so their ids sort in it.
  const created = makeEvent('source.created', { ...fields, data: { id, name: 'orders', type: 'csv' } });
  const ready = makeEvent('source.ready', { ...fields, data: { id, name: 'orders', type: 'csv', rowCount: 7, schema } });
  const failed = makeEvent('source.failed', { ...fields, data: { id, name: 'orders', error: 'gone' } });
  const deleted = makeEvent('source.deleted', { ...fields, data: { id } });
  // A failed re-sync of a source that keeps its last good data (as the sources service sends it).
  const failedKept = makeEvent('source.failed', { ...fields, data: { id, name: 'orders', error: 'gone', kept: { rowCount: 7, schema } } });
  return { created, ready, failed, deleted, failedKept };
}

describe('SourceProjectionRepository (on the test stack MongoDB)', () => {
  const mongo = useTestDatabase('projection');
  let repo: SourceProjectionRepository;

  beforeAll(async () => {
    repo = new SourceProjectionRepository(mongo.db);
    await repo.ensureIndexes();
  });

  it('builds the source from its events, with unknown column types read as strings', async () => {
    const accountId = newId('acct');
    const id = newId('src');
    const e = sourceEvents(accountId, id);
    expect(await repo.applyEvent(e.created)).toBe(true);
    expect(await repo.find(accountId, id)).toMatchObject({
      _id: id,
      accountId,
      name: 'orders',
      type: 'csv',
      status: 'pending',
      error: null,
      schema: [],
      rowCount: 0,
      deleted: false,
      lastEventId: e.created.id,
    });
    expect(await repo.applyEvent(e.ready)).toBe(true);
    expect(await repo.find(accountId, id)).toMatchObject({
      status: 'ready',
      rowCount: 7,
      schema: [
        { name: 'n', type: 'integer' },
        { name: 'v', type: 'string' },
      ],
      lastEventId: e.ready.id,
    });
    // A failed re-sync: the source keeps its last good data, so it stays ready on it.
    expect(await repo.applyEvent(e.failedKept)).toBe(true);
    expect(await repo.find(accountId, id)).toMatchObject({ status: 'ready', error: null, type: 'csv', rowCount: 7, lastEventId: e.failedKept.id });
    // Tenancy: another account does not see it.
    expect(await repo.find(newId('acct'), id)).toBeNull();
    await expect(repo.find('', id)).rejects.toThrow('accountId is required');
  });

  it('marks a source that never had data failed, and ready once a later sync succeeds', async () => {
    const accountId = newId('acct');
    const id = newId('src');
    const fields = { accountId, subject: id };
    const created = makeEvent('source.created', { ...fields, data: { id, name: 'orders', type: 'csv' } });
    const failed = makeEvent('source.failed', { ...fields, data: { id, name: 'orders', error: 'gone' } });
    const ready = makeEvent('source.ready', { ...fields, data: { id, name: 'orders', type: 'csv', rowCount: 2, schema } });
    const failedAgain = makeEvent('source.failed', { ...fields, data: { id, name: 'orders', error: 'gone again', kept: { rowCount: 2, schema } } });
    expect(await repo.applyEvent(created)).toBe(true);
    expect(await repo.applyEvent(failed)).toBe(true);
    expect(await repo.find(accountId, id)).toMatchObject({ status: 'failed', error: 'gone', rowCount: 0 });
    expect(await repo.applyEvent(ready)).toBe(true);
    expect(await repo.find(accountId, id)).toMatchObject({ status: 'ready', error: null, rowCount: 2 });
    expect(await repo.applyEvent(failedAgain)).toBe(true);
    expect(await repo.find(accountId, id)).toMatchObject({ status: 'ready', error: null, rowCount: 2, lastEventId: failedAgain.id });
  });

  it('ignores a repeated or older event, and an event that is not about a source', async () => {
    const accountId = newId('acct');
    const id = newId('src');
    const e = sourceEvents(accountId, id);
    expect(await repo.applyEvent(e.ready)).toBe(true);
    expect(await repo.applyEvent(e.ready)).toBe(false);
    expect(await repo.applyEvent(e.created)).toBe(false); // late: the source stays ready
    const other = makeEvent('model.ready', { accountId, subject: id, data: { id, name: 'x', type: 'kmeans' } } as never) as DomainEvent;
    expect(await repo.applyEvent(other)).toBe(false);
    expect(await repo.find(accountId, id)).toMatchObject({ status: 'ready', rowCount: 7, lastEventId: e.ready.id });
  });

  it('keeps a deleted source deleted, and never moves an id to another account', async () => {
    const accountId = newId('acct');
    const id = newId('src');
    const e = sourceEvents(accountId, id);
    await repo.applyEvent(e.created);
    await repo.applyEvent(e.deleted);
    const late = makeEvent('source.ready', { accountId, subject: id, data: { id, name: 'revived', type: 'csv', rowCount: 1, schema: [] } });
    expect(await repo.applyEvent(late)).toBe(true); // newer, so it moves lastEventId, but changes nothing else
    expect(await repo.find(accountId, id)).toMatchObject({ deleted: true, status: 'pending', name: 'orders', lastEventId: late.id });

    const foreign = makeEvent('source.failed', { accountId: newId('acct'), subject: id, data: { id, name: 'x', error: 'y' } });
    expect(await repo.applyEvent(foreign)).toBe(false);
    expect(await repo.find(accountId, id)).toMatchObject({ deleted: true, lastEventId: late.id });
  });

  it('ends on the newest of events applied concurrently, whatever their order', async () => {
    const accountId = newId('acct');
    const id = newId('src');
    const e = sourceEvents(accountId, id);
    const results = await Promise.all([e.failed, e.created, e.ready, e.failed, e.created].map((ev) => repo.applyEvent(ev)));
    expect(results.filter(Boolean).length).toBeGreaterThanOrEqual(1);
    expect(await repo.find(accountId, id)).toMatchObject({ status: 'failed', error: 'gone', lastEventId: e.failed.id });
    expect(await mongo.db.collection(SOURCE_PROJECTIONS_COLLECTION).countDocuments({ _id: id as never })).toBe(1);
  });

  it('ends ready on the kept data when the newest event is a failed re-sync that kept it, whatever the order', async () => {
    for (const order of [
      ['created', 'ready', 'failedKept'],
      ['failedKept', 'ready', 'created'],
    ] as const) {
      const accountId = newId('acct');
      const id = newId('src');
      const e = sourceEvents(accountId, id);
      for (const name of order) await repo.applyEvent(e[name]);
      expect([order.join(','), await repo.find(accountId, id)]).toMatchObject([order.join(','), { status: 'ready', error: null, rowCount: 7, lastEventId: e.failedKept.id }]);
    }
  });

  it("counts the account's sources not deleted, and the rows of its ready ones", async () => {
    const accountId = newId('acct');
    const [a, b, c, d] = [newId('src'), newId('src'), newId('src'), newId('src')];
    await repo.applyEvent(sourceEvents(accountId, a).ready); // 7 rows
    await repo.applyEvent(sourceEvents(accountId, b).ready); // 7 rows
    await repo.applyEvent(sourceEvents(accountId, c).created);
    const gone = sourceEvents(accountId, d);
    await repo.applyEvent(gone.ready);
    await repo.applyEvent(gone.deleted);
    await repo.applyEvent(sourceEvents(newId('acct'), newId('src')).ready); // another account's
    expect(await repo.countActive(accountId)).toBe(3);
    expect(await repo.readyRowCount(accountId)).toBe(14);
  });

  it('reads a document stored without type and error (as the models service wrote them) and applies events to it', async () => {
    const accountId = newId('acct');
    const id = newId('src');
    const e = sourceEvents(accountId, id);
    const legacy = {
      _id: id,
      accountId,
      name: 'orders',
      status: 'ready',
      schema: [{ name: 'n', type: 'integer' }],
      rowCount: 3,
      deleted: false,
      lastEventId: e.ready.id,
      updatedAt: new Date(),
    };
    await mongo.db.collection(SOURCE_PROJECTIONS_COLLECTION).insertOne(legacy as never);
    expect(await repo.find(accountId, id)).toEqual({ ...legacy, type: '', error: null });
    expect(await repo.applyEvent(e.failedKept)).toBe(true);
    expect(await repo.find(accountId, id)).toMatchObject({ status: 'ready', error: null, type: '', rowCount: 7, lastEventId: e.failedKept.id });
  });
});
