import type { Collection, Document } from 'mongodb';
import { makeEvent, newId, type DomainEvent } from '@dap/contracts';
import { Lifecycle } from '@dap/lifecycle';
import { createLogger } from '@dap/logger';
import { OUTBOX_PENDING_INDEX, OutboxRelay, outboxRelayOf, startOutboxRelay, TenantCollection, type StagedBatch, type TenantDoc } from '@dap/mongo';
import { uniqueSuffix, waitFor } from '@dap/testing';
import { useTestDatabase } from './test-database.ts';

interface Doc extends TenantDoc {
  n: number;
}

const logger = createLogger({ name: 'outbox-test', level: 'silent' });
const accountId = newId('acct');
const event = (n: number): DomainEvent => makeEvent('source.ready', { accountId, subject: `src_${n}`, data: { id: newId('src'), rowCount: n } } as never);

/** Counts the relay's queries for pending documents (the sweep) on a collection. */
function countFinds(coll: Collection<Document>) {
  const counter = { finds: 0 };
  const find = coll.find.bind(coll);
  coll.find = ((...args: Parameters<typeof find>) => {
    counter.finds++;
    return find(...args);
  }) as typeof coll.find;
  return counter;
}

describe('OutboxRelay (on the test stack MongoDB)', () => {
  const mongo = useTestDatabase('outbox');

  it('publishes handed-over events in batches and clears the documents without querying for pending ones', async () => {
    const raw = mongo.db.collection('handoff');
    const finds = countFinds(raw);
    const published: DomainEvent[][] = [];
    const relay = new OutboxRelay({ collections: [raw], publisher: { publish: async (e) => void published.push(e) }, logger, intervalMs: 60_000 });
    const coll = new TenantCollection<Doc>(mongo.db, 'handoff', (w) => relay.written(w));
    relay.start();
    await relay.flush(); // the start-up sweep, on an empty collection
    const findsAfterStart = finds.finds;

    const events = Array.from({ length: 60 }, (_, i) => event(i));
    await Promise.all(events.map((e, i) => coll.insert(accountId, { _id: `d${i}`, n: i }, [e])));
    await waitFor(async () => (await raw.countDocuments({ _outboxPending: true })) === 0, { what: 'every document cleared' });
    await relay.stop();

    expect(
      published
        .flat()
        .map((e) => e.id)
        .sort(),
    ).toEqual(events.map((e) => e.id).sort());
    expect(published.length).toBeLessThan(60); // writes of one turn share a Kafka batch
    expect(finds.finds).toBe(findsAfterStart);
    const docs = await raw.find({}).toArray();
    expect(docs).toHaveLength(60);
    expect(docs.every((d) => d._outboxPending === false && (d._outbox as unknown[]).length === 0)).toBe(true);
  });

  it('keeps events when publishing fails and publishes them, in order, once the broker is back', async () => {
    const raw = mongo.db.collection('failing');
    let down = true;
    let refused = 0;
    const published: DomainEvent[] = [];
    const relay = new OutboxRelay({
      collections: [raw],
      publisher: {
        publish: async (e) => {
          if (down) {
            refused++;
            throw new Error('broker down');
          }
          published.push(...e);
        },
      },
      logger,
      intervalMs: 60_000,
      retryMs: 50,
    });
    const coll = new TenantCollection<Doc>(mongo.db, 'failing', (w) => relay.written(w));
    relay.start();
    const first = event(1);
    const second = event(2);
    await coll.insert(accountId, { _id: 'a', n: 1 }, [first]);
    await waitFor(() => refused >= 3, { what: 'a few failed attempts' });
    await coll.update(accountId, 'a', { n: 2 }, [second]);
    expect(published).toEqual([]);
    expect((await raw.findOne({ _id: 'a' as never }))?._outboxPending).toBe(true);
    down = false;
    await waitFor(() => published.length >= 2, { what: 'the retried events' });
    await waitFor(async () => (await raw.findOne({ _id: 'a' as never }))?._outboxPending === false, { what: 'the document cleared' });
    await relay.stop();
    expect(published.map((e) => e.id)).toEqual([first.id, second.id]);
  });

  it('sweeps up what a crashed writer left, and deletes published tombstones', async () => {
    const raw = mongo.db.collection('sweep');
    const left = [event(1), event(2)];
    // Written by a process that died before its relay ran: pending in MongoDB, never handed over.
    await raw.insertMany([
      { _id: 'x' as never, accountId, n: 1, deletedAt: null, _outbox: [left[0]], _outboxPending: true },
      { _id: 'gone' as never, accountId, n: 2, deletedAt: new Date(), _outbox: [left[1]], _outboxPending: true },
    ]);
    const published: DomainEvent[] = [];
    const relay = new OutboxRelay({ collections: [raw], publisher: { publish: async (e) => void published.push(...e) }, logger, intervalMs: 60_000 });
    const coll = new TenantCollection<Doc>(mongo.db, 'sweep', (w) => relay.written(w));
    relay.start();
    await waitFor(() => published.length === 2, { what: 'the swept events' });
    await waitFor(async () => (await raw.countDocuments({ _id: 'gone' as never })) === 0, { what: 'the tombstone deleted' });
    expect((await raw.findOne({ _id: 'x' as never }))?._outboxPending).toBe(false);

    // A soft delete handed over: its event goes out, then the document.
    const deleted = event(3);
    await coll.softDelete(accountId, 'x', [deleted]);
    await waitFor(async () => (await raw.countDocuments({ _id: 'x' as never })) === 0, { what: 'the soft-deleted document removed' });
    await relay.stop();
    expect(published.map((e) => e.id).sort()).toEqual([left[0]!.id, left[1]!.id, deleted.id].sort());
  });

  it('leaves a document pending when events were added to it while its earlier ones were being published', async () => {
    const raw = mongo.db.collection('racing');
    const published: DomainEvent[] = [];
    const late = event(2);
    let relay: OutboxRelay | null = null;
    let raced = false;
    relay = new OutboxRelay({
      collections: [raw],
      publisher: {
        publish: async (e) => {
          published.push(...e);
          if (!raced) {
            raced = true;
            // Another instance appends an event between the publish and the clearing (no hand-off here).
            await raw.updateOne({ _id: 'r' as never }, { $push: { _outbox: late }, $set: { _outboxPending: true } } as Document);
          }
        },
      },
      logger,
      intervalMs: 60_000,
    });
    const coll = new TenantCollection<Doc>(mongo.db, 'racing', (w) => relay!.written(w));
    relay.start();
    await relay.flush();
    const early = event(1);
    await coll.insert(accountId, { _id: 'r', n: 1 }, [early]);
    await waitFor(() => raced, { what: 'the racing append' });
    await relay.flush();
    const doc = await raw.findOne({ _id: 'r' as never });
    await relay.stop();
    expect(published.map((e) => e.id)).toEqual([early.id, late.id]);
    expect(doc?._outboxPending).toBe(false);
    expect(doc?._outbox).toEqual([]);
  });

  it('clears insert-only collections by id alone, with no query that scans the collection', async () => {
    const raw = mongo.db.collection('log');
    const published: DomainEvent[] = [];
    const relay = new OutboxRelay({ collections: [raw], publisher: { publish: async (e) => void published.push(...e) }, logger, intervalMs: 60_000, insertOnly: ['log'] });
    const coll = new TenantCollection<Doc>(mongo.db, 'log', (w) => relay.written(w));
    relay.start();
    await relay.flush();
    const writes: unknown[] = [];
    const bulkWrite = raw.bulkWrite.bind(raw);
    raw.bulkWrite = ((ops: Parameters<typeof bulkWrite>[0], o?: Parameters<typeof bulkWrite>[1]) => {
      writes.push(...ops);
      return bulkWrite(ops, o);
    }) as typeof raw.bulkWrite;
    const events = Array.from({ length: 20 }, (_, i) => event(i));
    await Promise.all(events.map((e, i) => coll.insert(accountId, { _id: `l${i}`, n: i }, [e])));
    await waitFor(async () => (await raw.countDocuments({ _outboxPending: true })) === 0, { what: 'every log entry cleared' });
    await relay.stop();
    expect(published.map((e) => e.id).sort()).toEqual(events.map((e) => e.id).sort());
    expect(writes).toHaveLength(20);
    for (const w of writes as { updateOne: { filter: Document } }[]) expect(Object.keys(w.updateOne.filter)).toEqual(['_id']);
    expect((await raw.find({}).toArray()).every((d) => (d._outbox as unknown[]).length === 0)).toBe(true);
  });
  describe('staged batches (events staged ahead of a bulk write, tied to it by verify)', () => {
    /** A staged entry: the write it belongs to is the document `doc` with `n` set to `n`. */
    interface Entry {
      doc: string;
      n: number;
      events: DomainEvent[];
    }
    const published: DomainEvent[] = [];
    const relays: OutboxRelay<Entry>[] = [];
    const state = () => mongo.db.collection<{ _id: string; n: number }>('staged_state');
    const batches = () => mongo.db.collection('staged_batches');
    /** Keeps the entries whose write is in MongoDB. */
    const verify = async (entries: Entry[]) => {
      const docs = await state()
        .find({ _id: { $in: entries.map((e) => e.doc) } })
        .toArray();
      return entries.filter((e) => docs.some((d) => d._id === e.doc && d.n === e.n));
    };
    /** One process of `instance` with a document collection and a staged outbox. */
    const relayFor = (instance: string, opts: { staleMs?: number; publish?: (e: DomainEvent[]) => Promise<void> } = {}) => {
      const relay = new OutboxRelay<Entry>({
        collections: [mongo.db.collection('staged_docs')],
        publisher: { publish: opts.publish ?? (async (e) => void published.push(...e)) },
        logger,
        intervalMs: 60_000,
        staged: { collection: mongo.db.collection<StagedBatch<Entry>>('staged_batches'), instance, staleMs: opts.staleMs ?? 60_000, verify },
      });
      relays.push(relay);
      return relay;
    };
    const write = (doc: string, n: number) => state().updateOne({ _id: doc }, { $set: { n } }, { upsert: true });

    afterEach(async () => {
      for (const r of relays.splice(0)) await r.stop();
      published.length = 0;
      await batches().deleteMany({});
    });

    it('publishes a recorded batch from memory once, and deletes it', async () => {
      const relay = relayFor(`i${uniqueSuffix()}`);
      await relay.ensureIndexes();
      relay.start();
      const entries = [{ doc: 'a', n: 1, events: [event(1)] }];
      const id = await relay.stage(entries);
      await write('a', 1);
      relay.recorded(id, entries);
      await waitFor(() => published.length === 1, { what: 'the recorded event' });
      await waitFor(async () => (await batches().countDocuments({})) === 0, { what: 'the batch deleted' });
      // A sweep now finds nothing to publish again.
      await relay.flush();
      expect(published.map((e) => e.id)).toEqual([entries[0]!.events[0]!.id]);
    });

    it('after a crash between the write and the publish, the next process of the instance publishes what was written, once', async () => {
      const instance = `i${uniqueSuffix()}`;
      const entries = [
        { doc: 'w', n: 7, events: [event(1)] },
        { doc: 'never', n: 1, events: [event(2)] },
      ];
      // The dying process staged the batch, wrote the first document only, and never published.
      const dead = relayFor(instance);
      await dead.stage(entries);
      await write('w', 7);
      expect(published).toEqual([]);

      const next = relayFor(instance);
      next.start();
      await waitFor(async () => (await batches().countDocuments({})) === 0, { what: 'the left-behind batch cleared' });
      expect(published.map((e) => e.id)).toEqual([entries[0]!.events[0]!.id]);
      await next.flush(); // nothing is left to publish twice
      expect(published).toHaveLength(1);
    });

    it('leaves another instance’s fresh batch to it, and takes it over once stale', async () => {
      const entries = [{ doc: 'o', n: 3, events: [event(1)] }];
      await relayFor('other-instance').stage(entries);
      await write('o', 3);
      await relayFor(`i${uniqueSuffix()}`).flush();
      expect(published).toEqual([]);
      expect(await batches().countDocuments({})).toBe(1);
      await relayFor(`i${uniqueSuffix()}`, { staleMs: 0 }).flush();
      expect(published.map((e) => e.id)).toEqual([entries[0]!.events[0]!.id]);
      expect(await batches().countDocuments({})).toBe(0);
    });

    it('keeps both kinds of events when the publish fails, and publishes them all on the next pass', async () => {
      let down = true;
      const relay = relayFor(`i${uniqueSuffix()}`, {
        publish: async (e) => {
          if (down) throw new Error('broker down');
          published.push(...e);
        },
      });
      const docs = new TenantCollection<Doc>(mongo.db, 'staged_docs', (w) => relay.written(w));
      const docEvent = event(1);
      await docs.insert(accountId, { _id: 'd', n: 1 }, [docEvent]);
      const entries = [{ doc: 's', n: 2, events: [event(2)] }];
      const id = await relay.stage(entries);
      await write('s', 2);
      relay.recorded(id, entries);
      await expect(relay.flush()).rejects.toThrow('broker down');
      expect(await batches().countDocuments({})).toBe(1);
      down = false;
      await relay.flush();
      expect(published.map((e) => e.id).sort()).toEqual([docEvent.id, entries[0]!.events[0]!.id].sort());
      expect(await batches().countDocuments({})).toBe(0);
      expect((await mongo.db.collection('staged_docs').findOne({ _id: 'd' as never }))?._outboxPending).toBe(false);
    });
  });

  it('sweeps the collections only earlier versions wrote to at start, and not on later sweeps', async () => {
    const legacy = mongo.db.collection('legacy');
    const current = mongo.db.collection('current');
    const pending = (n: number) => ({ _id: `p${n}` as never, accountId, n, _outbox: [event(n)], _outboxPending: true });
    await legacy.insertOne(pending(1));
    const published: DomainEvent[] = [];
    const relay = new OutboxRelay({
      collections: [legacy, current],
      sweptAtStartOnly: ['legacy'],
      insertOnly: ['legacy'],
      publisher: { publish: async (e) => void published.push(...e) },
      logger,
      intervalMs: 60_000,
    });
    relay.start();
    await relay.flush();
    expect(published.map((e) => e.subject)).toEqual(['src_1']);
    // Written after start: the later sweep takes the current collection's (positive control), not the legacy one's.
    await legacy.insertOne(pending(2));
    await current.insertOne(pending(3));
    await relay.flush();
    await relay.stop();
    expect(published.map((e) => e.subject)).toEqual(['src_1', 'src_3']);
    expect((await legacy.findOne({ _id: 'p2' as never }))?._outboxPending).toBe(true);
  });

  describe('startOutboxRelay', () => {
    const pending = (raw: Collection<Document>, id: string, e: DomainEvent) =>
      // Left by another process (the accounts CLI) and never handed over to this relay.
      raw.insertOne({ _id: id as never, accountId, n: 1, deletedAt: null, _outbox: [e], _outboxPending: true });

    it('refuses to start while a swept collection has no index on the pending flag, and starts once it has', async () => {
      const raw = mongo.db.collection('unindexed');
      const atStartOnly = mongo.db.collection('unindexed_at_start');
      await raw.insertOne({ _id: 'u' as never, accountId, n: 1, deletedAt: null, _outbox: [], _outboxPending: false });
      await atStartOnly.insertOne({ _id: 'v' as never, accountId, n: 1, deletedAt: null, _outbox: [], _outboxPending: false });
      await raw.createIndex({ accountId: 1, _outboxPending: 1 }); // names the flag, but does not lead with it
      const relay = new OutboxRelay({
        collections: [raw, atStartOnly],
        sweptAtStartOnly: ['unindexed_at_start'],
        publisher: { publish: async () => {} },
        logger,
        intervalMs: 60_000,
      });
      const life = new Lifecycle(logger);
      await expect(startOutboxRelay(life, relay, logger)).rejects.toThrow('outbox relay: no index on _outboxPending in unindexed (declare OUTBOX_PENDING_INDEX)');
      expect(life.opened).toEqual([]);
      await raw.createIndex(...OUTBOX_PENDING_INDEX);
      await startOutboxRelay(life, relay, logger); // a collection swept at start only needs none
      expect(life.opened).toEqual(['outbox relay']);
      await life.stop();
    });

    it('at stop, ends polling and then publishes what is still pending', async () => {
      const raw = mongo.db.collection('shutdown');
      await raw.createIndex(...OUTBOX_PENDING_INDEX);
      const published: DomainEvent[] = [];
      const relay = new OutboxRelay({ collections: [raw], publisher: { publish: async (e) => void published.push(...e) }, logger, intervalMs: 60_000 });
      const life = new Lifecycle(logger);
      await startOutboxRelay(life, relay, logger);
      expect(life.opened).toEqual(['outbox relay']);
      await relay.flush(); // the start-up sweep, on an empty collection
      const left = event(1);
      await pending(raw, 'p', left);
      await life.stop();
      expect(published.map((e) => e.id)).toEqual([left.id]);
      expect((await raw.findOne({ _id: 'p' as never }))?._outboxPending).toBe(false);
    });

    it('logs a flush that fails at stop and still stops, leaving the events for the next start', async () => {
      const raw = mongo.db.collection('shutdown_down');
      await raw.createIndex(...OUTBOX_PENDING_INDEX);
      let refused = 0;
      const relay = new OutboxRelay({
        collections: [raw],
        publisher: {
          publish: async () => {
            refused++;
            throw new Error('broker down');
          },
        },
        logger,
        intervalMs: 60_000,
      });
      const warn = jest.spyOn(logger, 'warn');
      try {
        const life = new Lifecycle(logger);
        await startOutboxRelay(life, relay, logger);
        await relay.flush();
        await pending(raw, 'q', event(2));
        await expect(life.stop()).resolves.toBeUndefined();
        expect(refused).toBe(1); // the shutdown's flush tried to publish, and failed
        expect(warn).toHaveBeenCalledWith({ err: expect.objectContaining({ message: 'broker down' }) }, expect.stringMatching(/^outbox flush at shutdown failed/));
        expect((await raw.findOne({ _id: 'q' as never }))?._outboxPending).toBe(true);
      } finally {
        warn.mockRestore();
      }
    });
  });

  it("outboxRelayOf relays the collections a service's plan names, and only those", async () => {
    const [a, b, other] = ['plan_a', 'plan_b', 'plan_other'] as const;
    const published: DomainEvent[] = [];
    const relay = outboxRelayOf(mongo.db, { collections: [a, b], intervalMs: 60_000 }, { publish: async (e) => void published.push(...e) }, logger);
    const left = (name: string, id: string, e: DomainEvent) =>
      mongo.db.collection(name).insertOne({ _id: id as never, accountId, n: 1, deletedAt: null, _outbox: [e], _outboxPending: true });
    const [ea, eb, eo] = [event(1), event(2), event(3)];
    await left(a, 'pa', ea);
    await left(b, 'pb', eb);
    await left(other, 'po', eo);
    relay.start();
    await relay.flush();
    await relay.stop();
    expect(published.map((e) => e.id).sort()).toEqual([ea.id, eb.id].sort());
    expect((await mongo.db.collection(other).findOne({ _id: 'po' as never }))?._outboxPending).toBe(true);
  });

  /** A started relay over an insert-only collection whose events linger a minute (longer than any test). */
  async function lingeringRelay(name: string, publish: (events: DomainEvent[]) => void) {
    const raw = mongo.db.collection(name);
    const relay = new OutboxRelay({ collections: [raw], insertOnly: [name], publisher: { publish: async (e) => publish(e) }, logger, intervalMs: 60_000, lingerMs: 60_000 });
    const coll = new TenantCollection<Doc>(mongo.db, name, (w) => relay.written(w));
    relay.start();
    await relay.flush();
    return { raw, relay, coll };
  }

  it('holds handed-over events for lingerMs so writes spread over time share one batch, and publishes what lingers at shutdown', async () => {
    const published: DomainEvent[][] = [];
    // The linger outlasts the test: only the shutdown flush can publish these.
    const { raw, relay, coll } = await lingeringRelay('lingering', (e) => void published.push(e));
    const events = [event(1), event(2), event(3)];
    for (const [i, e] of events.entries()) await coll.insert(accountId, { _id: `l${i}`, n: i }, [e]);

    // Positive control: the same writes to a relay without a linger are published at once.
    const quickRaw = mongo.db.collection('not_lingering');
    const quickPublished: DomainEvent[] = [];
    const quick = new OutboxRelay({ collections: [quickRaw], publisher: { publish: async (e) => void quickPublished.push(...e) }, logger, intervalMs: 60_000 });
    const quickColl = new TenantCollection<Doc>(mongo.db, 'not_lingering', (w) => quick.written(w));
    quick.start();
    await quick.flush();
    await quickColl.insert(accountId, { _id: 'q', n: 0 }, [event(9)]);
    await waitFor(() => quickPublished.length === 1, { what: 'the event without a linger' });
    await quick.stop();
    expect(published).toEqual([]);
    expect(await raw.countDocuments({ _outboxPending: true })).toBe(3);

    await relay.stop();
    await relay.flush(); // what the services' shutdown does
    expect(published.map((batch) => batch.map((e) => e.id))).toEqual([events.map((e) => e.id)]);
    expect(await raw.countDocuments({ _outboxPending: true })).toBe(0);
  });

  it('publishes lingering events at once when enough are waiting', async () => {
    const published: DomainEvent[] = [];
    const { relay, coll } = await lingeringRelay('lingering_full', (e) => void published.push(...e));
    const outcome = await coll.insertEach(Array.from({ length: 500 }, (_, i) => ({ accountId, doc: { _id: `g${i}`, n: i }, events: [event(i)] })));
    expect(outcome.every((o) => o === null)).toBe(true);
    await waitFor(() => published.length === 500, { what: '500 lingering events published before the linger ends' });
    await relay.stop();
  });
});
