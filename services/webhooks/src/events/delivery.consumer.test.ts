import { makeEvent, newId, type DomainEvent } from '@dap/contracts';
import type { DeliveryDoc } from '../persistence/delivery.repository.ts';
import type { EndpointDoc } from '../persistence/endpoint.repository.ts';
import { deliveryFanOutBatch, type FanOutDeps } from './delivery.consumer.ts';

/** The fan-out against fakes: which deliveries go before they are stored, and what the consumer waits for. */
const accountId = newId('acct');
const endpointOf = (id: string, fields: Partial<EndpointDoc> = {}): EndpointDoc => ({
  _id: id,
  accountId,
  url: `http://receiver.test/${id}`,
  events: ['report.*'],
  description: '',
  status: 'enabled',
  disabledReason: null,
  secretSealed: 'sealed',
  failingSince: null,
  createdAt: new Date(0),
  updatedAt: new Date(0),
  ...fields,
});

const reportEvent = (): DomainEvent => makeEvent('report.completed', { accountId, subject: 'rpt_1', data: { id: newId('rpt'), sourceId: 'src_1', rowCount: 1, durationMs: 1 } });

function fanOut(endpoints: EndpointDoc[], opts: { held?: Map<string, Promise<void>>; assignedAt?: number; stored?: string[] } = {}) {
  const inserted: DeliveryDoc[] = [];
  const lookedUp: string[][] = [];
  const unplanned: string[] = [];
  const firsts: Array<{ id: string; settle: () => void }> = [];
  const dispatched: string[] = [];
  const deps: FanOutDeps = {
    endpoints: {
      listActive: async () => endpoints,
      findById: async () => null,
      countFiltered: async () => {},
    } as unknown as FanOutDeps['endpoints'],
    deliveries: {
      insertMany: async (docs: DeliveryDoc[]) => {
        inserted.push(...docs);
        return new Set(docs.map((d) => d._id));
      },
      existingIds: async (ids: string[]) => {
        lookedUp.push(ids);
        return new Set(ids.filter((id) => opts.stored?.includes(id)));
      },
    } as unknown as FanOutDeps['deliveries'],
    dispatcher: {
      owner: 'dsp_test',
      instanceId: 'test',
      leaseUntil: () => new Date(Date.now() + 60_000),
      plan: () => 'send',
      unplan: (endpointId) => void unplanned.push(endpointId),
      mayHaveBeenTaken: (at) => at < (opts.assignedAt ?? 0),
      dispatchClaimed: (d) => void dispatched.push(d._id),
      enqueueClaimed: (d) => void dispatched.push(d._id),
      held: (id) => opts.held?.get(id) ?? null,
      sendFirst: (d) =>
        new Promise<void>((resolve) => {
          firsts.push({ id: d._id, settle: resolve });
        }),
    },
  };
  return { run: deliveryFanOutBatch(deps), inserted, firsts, dispatched, lookedUp, unplanned };
}

describe('deliveryFanOutBatch', () => {
  it('sends to a plain endpoint before storing, and answers a durable promise that waits for its record', async () => {
    const f = fanOut([endpointOf('whk_plain')]);
    const e = reportEvent();
    const taken = await f.run([e]);
    expect(f.inserted).toEqual([]);
    expect(f.firsts.map((x) => x.id)).toEqual([`${e.id}:whk_plain`]);
    let durable = false;
    void taken!.durable.then(() => (durable = true));
    await new Promise((r) => setImmediate(r));
    expect(durable).toBe(false);
    f.firsts[0]!.settle();
    await new Promise((r) => setImmediate(r));
    expect(durable).toBe(true);
  });

  it('stores first, before it returns, what an ordering, a rate limit or a pause decides the time of', async () => {
    const f = fanOut([
      endpointOf('whk_ordered', { ordering: 'ordered' }),
      endpointOf('whk_limited', { rateLimitPerSecond: 5 }),
      endpointOf('whk_paused', { pausedUntil: new Date(Date.now() + 60_000) }),
      endpointOf('whk_plain'),
    ]);
    const e = reportEvent();
    await f.run([e]);
    expect(f.inserted.map((d) => d.endpointId)).toEqual(['whk_ordered', 'whk_limited', 'whk_paused']);
    expect(f.dispatched).toEqual(['whk_ordered', 'whk_limited', 'whk_paused'].map((id) => `${e.id}:${id}`));
    expect(f.firsts.map((x) => x.id)).toEqual([`${e.id}:whk_plain`]);
  });

  it('does not take again an event it already holds (consumed again after a rebalance), and waits for the same record', async () => {
    const e = reportEvent();
    let settle!: () => void;
    const pending = new Promise<void>((r) => (settle = r));
    const f = fanOut([endpointOf('whk_plain')], { held: new Map([[`${e.id}:whk_plain`, pending]]) });
    const taken = await f.run([e]);
    expect(f.firsts).toEqual([]);
    expect(f.inserted).toEqual([]);
    let durable = false;
    void taken!.durable.then(() => (durable = true));
    await new Promise((r) => setImmediate(r));
    expect(durable).toBe(false);
    settle();
    await new Promise((r) => setImmediate(r));
    expect(durable).toBe(true);
  });

  it('does not send again what another process sent and stored without committing, looking up only events from before it took over', async () => {
    const [old, older] = [reportEvent(), reportEvent()];
    const takenOverAt = Date.now() + 1_000;
    const later = { ...reportEvent(), occurredAt: new Date(takenOverAt + 5_000).toISOString() };
    const f = fanOut([endpointOf('whk_plain')], { assignedAt: takenOverAt, stored: [`${old.id}:whk_plain`] });
    await f.run([old, older, later]);
    expect(f.lookedUp).toEqual([[`${old.id}:whk_plain`, `${older.id}:whk_plain`]]); // one look-up for the chunk, not the later event
    expect(f.firsts.map((x) => x.id)).toEqual([`${older.id}:whk_plain`, `${later.id}:whk_plain`]);
    expect(f.unplanned).toEqual(['whk_plain']); // the stored one's slot given back
    // Positive control: events newer than the take-over are not looked up, and go.
    const g = fanOut([endpointOf('whk_plain')], { assignedAt: 0, stored: [`${old.id}:whk_plain`] });
    await g.run([old, older]);
    expect(g.lookedUp).toEqual([]);
    expect(g.firsts).toHaveLength(2);
  });
});
