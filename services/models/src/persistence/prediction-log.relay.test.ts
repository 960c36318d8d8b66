import type { Collection, Document } from 'mongodb';
import { makeEvent, newId, type DomainEvent } from '@dap/contracts';
import { createLogger } from '@dap/logger';
import { PredictionLogRelay } from './prediction-log.relay.ts';

/** Just enough of a collection for the relay: pending documents, a limited find, and updateMany by ids. */
function fakeCollection() {
  const docs: Document[] = [];
  const calls = { find: 0, updateMany: 0 };
  const coll = {
    find: (filter: Document) => ({
      limit: (n: number) => ({
        toArray: async () => {
          calls.find++;
          return docs.filter((d) => d._outboxPending === filter._outboxPending).slice(0, n).map((d) => ({ _id: d._id, _outbox: d._outbox }));
        },
      }),
    }),
    updateMany: async (filter: { _id: { $in: string[] } }, update: { $set: Document }) => {
      calls.updateMany++;
      for (const d of docs) if (filter._id.$in.includes(d._id)) Object.assign(d, update.$set);
    },
  };
  return { docs, calls, coll: coll as unknown as Collection<Document> };
}

const event = (): DomainEvent =>
  makeEvent('prediction.completed', { accountId: newId('acct'), subject: 'prd_x', data: { id: newId('prd'), modelId: newId('mdl'), count: 1, latencyMs: 1 } });

describe('PredictionLogRelay', () => {
  const logger = createLogger({ name: 'relay-test', level: 'silent' });

  it('publishes the events of many writes in one batch and clears them', async () => {
    const { docs, calls, coll } = fakeCollection();
    const published: DomainEvent[][] = [];
    const relay = new PredictionLogRelay({ collection: coll, publisher: { publish: async (e) => void published.push(e) }, logger, intervalMs: 60_000, coalesceMs: 20 });
    relay.start();
    await relay.flush(); // the start-up pass, on an empty log
    const callsBefore = calls.find;
    for (let i = 0; i < 50; i++) {
      docs.push({ _id: `d${i}`, _outbox: [event()], _outboxPending: true });
      relay.kick();
    }
    await new Promise((r) => setTimeout(r, 60));
    await relay.stop();
    expect(published).toHaveLength(1);
    expect(published[0]).toHaveLength(50);
    expect(calls.find - callsBefore).toBeLessThanOrEqual(2);
    expect(docs.every((d) => d._outboxPending === false && d._outbox.length === 0)).toBe(true);
  });

  it('keeps entries pending when publishing fails, and publishes them on a later pass', async () => {
    const { docs, coll } = fakeCollection();
    const events = [event(), event()];
    docs.push({ _id: 'a', _outbox: [events[0]], _outboxPending: true }, { _id: 'b', _outbox: [events[1]], _outboxPending: true });
    let fail = true;
    const published: DomainEvent[] = [];
    const publisher = {
      publish: async (e: DomainEvent[]) => {
        if (fail) throw new Error('broker down');
        published.push(...e);
      },
    };
    const relay = new PredictionLogRelay({ collection: coll, publisher, logger, batchSize: 1 });
    await expect(relay.flush()).rejects.toThrow('broker down');
    expect(docs.every((d) => d._outboxPending)).toBe(true);
    fail = false;
    await relay.flush();
    expect(published.map((e) => e.id)).toEqual(events.map((e) => e.id));
    expect(docs.every((d) => !d._outboxPending)).toBe(true);
  });
});
