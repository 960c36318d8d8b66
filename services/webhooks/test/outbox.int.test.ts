import { makeEvent, newId, type DomainEvent } from '@dap/contracts';
import { connectMongo, OutboxRelay, type MongoHandle } from '@dap/mongo';
import { stackEnv, uniqueSuffix, waitFor } from '@dap/testing';
import {
  CLAIM_MARGIN_MS,
  DELIVERY_OUTBOX,
  DeliveryRepository,
  newDelivery,
  recordedEntries,
  UNLOCKED,
  type DeliveryDoc,
  type OutboxEntry,
} from '../src/persistence/delivery.repository.ts';
import { silent, sleep } from './harness.ts';

/**
 * The delivery outbox (the staged outbox of @dap/mongo's relay) and the batched record writes against the MongoDB of the test stack: events of final
 * attempts are staged per batch before the attempts are recorded, published from memory once they are, and
 * a batch left behind by a crash (before or after its record write) is verified against the deliveries, so
 * exactly the recorded attempts emit their delivery.completed and none is lost.
 */
describe('delivery outbox and batched records', () => {
  let mongo: MongoHandle;
  const owner = { id: 'dsp_test', instance: `outbox-${uniqueSuffix()}` };
  const published: DomainEvent[] = [];
  const publisher = { publish: async (events: DomainEvent[]) => void published.push(...events) };
  const outboxes: OutboxRelay<OutboxEntry>[] = [];
  const deliveries = () => mongo.db.collection<DeliveryDoc>('deliveries');
  const staged = () => mongo.db.collection(DELIVERY_OUTBOX);
  /** The relay as the service wires it (the staged outbox of its record writes), as one process of `instance`. */
  const outboxFor = (instance = owner.instance, staleMs = 60_000) => {
    const o = new OutboxRelay<OutboxEntry>({
      collections: [],
      publisher,
      logger: silent,
      staged: { collection: mongo.db.collection(DELIVERY_OUTBOX), instance, staleMs, verify: recordedEntries(deliveries()) },
    });
    outboxes.push(o);
    return o;
  };

  beforeAll(async () => {
    mongo = await connectMongo(stackEnv().MONGO_URL, `t${uniqueSuffix()}_whoutbox`);
  });

  afterEach(async () => {
    for (const o of outboxes.splice(0)) await o.stop();
    published.length = 0;
  });

  afterAll(async () => {
    await mongo?.db.dropDatabase();
    await mongo?.close();
  });

  /** A pending delivery claimed by `owner` until `lockedUntil`, as the fan-out inserts it. */
  async function insertClaimed(lockedUntil = new Date(Date.now() + 60_000)): Promise<DeliveryDoc> {
    const doc = newDelivery(
      { accountId: newId('acct'), endpointId: newId('whk'), eventId: newId('evt'), eventType: 'report.completed', requestId: null, body: '{}' },
      { until: lockedUntil, owner: owner.id, instance: owner.instance },
    );
    await deliveries().insertOne(doc);
    return doc;
  }

  const completedOf = (d: DeliveryDoc): DomainEvent =>
    makeEvent('delivery.completed', {
      accountId: d.accountId,
      subject: d.endpointId,
      requestId: null,
      data: { endpointId: d.endpointId, eventId: d.eventId, outcome: 'succeeded', attempts: 1 },
    });
  const attemptAt = (ms: number) => ({ at: new Date(ms), statusCode: 200, latencyMs: 1, error: null });
  const success = { status: 'succeeded' as const, nextAttemptAt: null };

  it('records concurrent final attempts in one batch, publishes each delivery.completed once and leaves no outbox behind', async () => {
    const outbox = outboxFor();
    outbox.start();
    const repo = new DeliveryRepository(mongo.db, outbox);
    const docs = await Promise.all(Array.from({ length: 20 }, () => insertClaimed()));
    const events = docs.map(completedOf);
    const base = Date.now();
    const recorded = await Promise.all(docs.map((d, i) => repo.recordAttempt(d._id, { owner: owner.id, until: d.lockedUntil }, attemptAt(base + i), success, [events[i]!])));
    expect(recorded).toEqual(docs.map(() => true));
    await waitFor(() => published.length >= 20, { what: 'twenty delivery.completed' });
    expect(published.map((e) => e.id).sort()).toEqual(events.map((e) => e.id).sort());
    await waitFor(async () => (await staged().countDocuments({})) === 0, { what: 'the outbox drained' });
    const stored = await deliveries()
      .find({ _id: { $in: docs.map((d) => d._id) } })
      .toArray();
    expect(stored.every((d) => d.status === 'succeeded' && d.lockedBy === null && d.attempts.length === 1 && d._outbox === undefined)).toBe(true);
    await sleep(100);
    expect(published).toHaveLength(20);
  });

  it('stores a delivery with its first attempt in the same bulk write as records; one stored before is refused and emits nothing', async () => {
    const outbox = outboxFor();
    outbox.start();
    const repo = new DeliveryRepository(mongo.db, outbox);
    const claimed = await insertClaimed();
    const fields = () => ({ accountId: newId('acct'), endpointId: newId('whk'), eventId: newId('evt'), eventType: 'report.completed', requestId: null, body: '{}' });
    const claim = { until: new Date(Date.now() + 60_000), owner: owner.id, instance: owner.instance };
    // Sent before anything was stored: not in the collection yet.
    const fresh = newDelivery(fields(), claim);
    // Stored first by another process (its event was consumed twice): that record stands.
    const taken = newDelivery(fields(), { ...claim, owner: 'dsp_other' });
    await deliveries().insertOne(taken);
    const [e1, e2, e3] = [completedOf(claimed), completedOf(fresh), completedOf(taken)];
    const bulk = jest.spyOn(repo.raw, 'bulkWrite');
    const at = Date.now();
    const results = await Promise.all([
      repo.recordAttempt(claimed._id, { owner: owner.id, until: claimed.lockedUntil }, attemptAt(at), success, [e1]),
      repo.recordFirstAttempt(fresh, attemptAt(at + 1), success, [e2]),
      repo.recordFirstAttempt(taken, attemptAt(at + 2), success, [e3]),
    ]);
    expect(results).toEqual([true, true, false]);
    expect(bulk).toHaveBeenCalledTimes(1); // one round trip for the three
    bulk.mockRestore();
    expect(await deliveries().findOne({ _id: fresh._id })).toMatchObject({
      status: 'succeeded',
      attempts: [{ at: new Date(at + 1), statusCode: 200 }],
      lockedBy: null,
      lockedUntil: UNLOCKED,
      finishedAt: expect.any(Date),
    });
    expect(await deliveries().findOne({ _id: taken._id })).toMatchObject({ status: 'pending', attempts: [], lockedBy: 'dsp_other' });
    await waitFor(() => published.length >= 2, { what: 'two delivery.completed' });
    await waitFor(async () => (await staged().countDocuments({})) === 0, { what: 'the outbox drained' });
    await sleep(100);
    expect(published.map((e) => e.id).sort()).toEqual([e1.id, e2.id].sort());
  });

  it('after a crash between staging and the record write, publishes only what was recorded, then clears the batch', async () => {
    const [recordedDoc, lostDoc] = [await insertClaimed(), await insertClaimed()];
    const at = Date.now();
    const entries: OutboxEntry[] = [
      { deliveryId: recordedDoc._id, attemptAt: new Date(at), events: [completedOf(recordedDoc)] },
      { deliveryId: lostDoc._id, attemptAt: new Date(at + 1), events: [completedOf(lostDoc)] },
    ];
    // The process that staged the batch recorded one attempt, then died before recording the other or publishing.
    const dead = outboxFor();
    await dead.stage(entries);
    await deliveries().updateOne({ _id: recordedDoc._id }, { $push: { attempts: attemptAt(at) }, $set: { status: 'succeeded', lockedBy: null, lockedUntil: UNLOCKED } });
    expect(published).toHaveLength(0);

    // Its successor under the same instance id sweeps at start.
    const next = outboxFor();
    next.start();
    await waitFor(async () => (await staged().countDocuments({})) === 0, { what: 'the stale batch cleared' });
    expect(published.map((e) => e.id)).toEqual([entries[0]!.events[0]!.id]);
    // The unrecorded attempt (still claimed, so it is made again) emitted nothing.
    expect(await deliveries().findOne({ _id: lostDoc._id })).toMatchObject({ status: 'pending', attempts: [] });
  });

  it('republishes a recorded batch whose publish was cut short with the same event ids, and verifies by attempt time', async () => {
    const doc = await insertClaimed();
    const at = Date.now();
    const entry: OutboxEntry = { deliveryId: doc._id, attemptAt: new Date(at), events: [completedOf(doc)] };
    await outboxFor().stage([entry]);
    // Recorded, and redelivered since: a later attempt of a new series does not hide the staged one.
    await deliveries().updateOne({ _id: doc._id }, { $push: { attempts: { $each: [attemptAt(at), attemptAt(at + 5_000)] } }, $set: { status: 'pending', seriesStart: 1 } });
    const next = outboxFor();
    next.start();
    await waitFor(() => published.length >= 1, { what: 'the recorded event' });
    expect(published[0]!.id).toBe(entry.events[0]!.id);
  });

  it('leaves another instance’s fresh batch to its owner and takes it over once stale', async () => {
    const doc = await insertClaimed();
    const at = Date.now();
    const other = outboxFor('another-instance');
    await other.stage([{ deliveryId: doc._id, attemptAt: new Date(at), events: [completedOf(doc)] }]);
    await deliveries().updateOne({ _id: doc._id }, { $push: { attempts: attemptAt(at) } });

    const fresh = outboxFor(owner.instance, 60_000);
    await fresh.flush();
    expect(published).toHaveLength(0);
    expect(await staged().countDocuments({})).toBe(1);

    const stale = outboxFor(owner.instance, 0);
    await stale.flush();
    expect(published).toHaveLength(1);
    expect(await staged().countDocuments({})).toBe(0);
  });

  it('keeps a batch whose record write failed for the sweep, which publishes nothing if nothing was recorded', async () => {
    const doc = await insertClaimed();
    const failing = {
      stage: (entries: OutboxEntry[]) => outbox.stage(entries),
      recorded: (id: string, entries: OutboxEntry[]) => outbox.recorded(id, entries),
      unsettled: (id: string) => outbox.unsettled(id),
    };
    const outbox = outboxFor(owner.instance, 0);
    const repo = new DeliveryRepository(mongo.db, failing);
    // The bulk write fails after the events were staged.
    const spy = jest.spyOn(repo.raw, 'bulkWrite').mockRejectedValueOnce(new Error('connection reset'));
    await expect(repo.recordAttempt(doc._id, { owner: owner.id, until: doc.lockedUntil }, attemptAt(Date.now()), success, [completedOf(doc)])).rejects.toThrow('connection reset');
    spy.mockRestore();
    expect(await staged().countDocuments({})).toBe(1);
    await outbox.flush();
    expect(published).toHaveLength(0);
    expect(await staged().countDocuments({})).toBe(0);
  });

  it('reads the claim back only when it is about to lapse, and then records only for its owner', async () => {
    const outbox = outboxFor();
    const repo = new DeliveryRepository(mongo.db, outbox);
    const find = jest.spyOn(repo.raw, 'find');
    const safe = await insertClaimed();
    expect(await repo.recordAttempt(safe._id, { owner: owner.id, until: safe.lockedUntil }, attemptAt(Date.now()), success)).toBe(true);
    expect(find).not.toHaveBeenCalled();

    // A claim with less than the margin left may have lapsed: it is checked, and one taken over is not written.
    const lapsing = await insertClaimed(new Date(Date.now() + CLAIM_MARGIN_MS / 2));
    await deliveries().updateOne({ _id: lapsing._id }, { $set: { lockedBy: 'dsp_other' } });
    expect(await repo.recordAttempt(lapsing._id, { owner: owner.id, until: lapsing.lockedUntil }, attemptAt(Date.now()), success, [completedOf(lapsing)])).toBe(false);
    expect(find).toHaveBeenCalledTimes(1);
    expect(await deliveries().findOne({ _id: lapsing._id })).toMatchObject({ status: 'pending', attempts: [], lockedBy: 'dsp_other' });
    expect(await staged().countDocuments({})).toBe(0); // nothing staged for an attempt that is not recorded
    find.mockRestore();
  });
});
