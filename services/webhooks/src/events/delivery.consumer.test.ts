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

function fanOut(endpoints: EndpointDoc[], opts: { held?: Map<string, Promise<void>>; takingOver?: boolean; stored?: string[] } = {}) {
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
      takingOver: () => opts.takingOver ?? false,
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

  it('just after a start or a rebalance, does not send again what another process sent and stored without committing', async () => {
    const [old, fresh] = [reportEvent(), reportEvent()];
    const f = fanOut([endpointOf('whk_plain')], { takingOver: true, stored: [`${old.id}:whk_plain`] });
    await f.run([old, fresh]);
    expect(f.lookedUp).toEqual([[`${old.id}:whk_plain`, `${fresh.id}:whk_plain`]]); // one look-up for the chunk
    expect(f.firsts.map((x) => x.id)).toEqual([`${fresh.id}:whk_plain`]);
    expect(f.unplanned).toEqual(['whk_plain']); // its slot given back
    // Positive control: past that window, no look-up, and the same events would both go.
    const g = fanOut([endpointOf('whk_plain')], { takingOver: false, stored: [`${old.id}:whk_plain`] });
    await g.run([old, fresh]);
    expect(g.lookedUp).toEqual([]);
    expect(g.firsts).toHaveLength(2);
  });
});
