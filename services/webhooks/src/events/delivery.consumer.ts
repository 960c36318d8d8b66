import { eventMatches, isId, isPublicEventType, type DomainEvent } from '@dap/contracts';
import type { Taken } from '@dap/kafka';
import { sendsFirst, type Dispatcher, type Plan } from '../workers/dispatcher.ts';
import { deliveryBody } from '../domain/signing.ts';
import { matchesFilter } from '../domain/filter.ts';
import { deliveryIdOf, newDelivery, skippedDelivery, type DeliveryDoc, type DeliveryRepository } from '../persistence/delivery.repository.ts';
import type { EndpointDoc, EndpointRepository } from '../persistence/endpoint.repository.ts';

export const DELIVERY_GROUP_ID = 'webhooks-delivery';

export interface FanOutDeps {
  endpoints: EndpointRepository;
  deliveries: DeliveryRepository;
  dispatcher: Pick<Dispatcher, 'plan' | 'unplan' | 'dispatchClaimed' | 'enqueueClaimed' | 'sendFirst' | 'held' | 'mayHaveBeenTaken' | 'leaseUntil' | 'owner' | 'instanceId'>;
  /** The dispatcher's clock (new deliveries are due at its now); the system clock by default. */
  now?: () => number;
}

/**
 * Which of the account's endpoints this event concerns: the enabled ones get it, the disabled ones skip it.
 * An endpoint whose content filter the payload does not match is left out and counted in `filtered`.
 */
async function targetsOf(deps: FanOutDeps, event: DomainEvent, filtered: Map<string, { accountId: string; n: number }>): Promise<EndpointDoc[]> {
  if (event.type === 'webhook.test') {
    // A test goes to the endpoint it names, whatever its filters.
    const ep = await deps.endpoints.findById(event.accountId, event.data.endpointId);
    return ep && ep.status === 'enabled' ? [ep] : [];
  }
  const occurred = Date.parse(event.occurredAt);
  const all = await deps.endpoints.listActive(event.accountId);
  // An endpoint hears what happens after it was registered, even if the log is replayed.
  const concerned = all.filter((ep) => eventMatches(ep.events, event.type) && !(occurred < ep.createdAt.getTime()));
  if (!concerned.some((ep) => ep.filter)) return concerned;
  const payload: unknown = JSON.parse(deliveryBody(event));
  return concerned.filter((ep) => {
    if (!ep.filter || matchesFilter(ep.filter, payload)) return true;
    const c = filtered.get(ep._id) ?? { accountId: ep.accountId, n: 0 };
    c.n++;
    filtered.set(ep._id, c);
    return false;
  });
}

/**
 * Turns public events into one delivery per matching endpoint. A batch costs one endpoint query, however many
 * events it holds. Where nothing but a free slot decides when a delivery goes (`sendsFirst`), it is sent before
 * anything is written and stored with its first attempt's outcome, one write instead of two: the answer's
 * `durable` resolves once every such delivery is stored, and the consumer commits the batch's offsets only
 * then (a crash before that consumes the events again: at least once, with the same webhook-id). Others are
 * inserted first, already claimed by this instance (the insert is the claim), before this returns. Either way
 * a delivery goes at once where its endpoint has a slot, or waits in order in the dispatcher until one frees.
 * Inserting an existing `${eventId}:${endpointId}` is a no-op, which makes a redelivered event harmless. An
 * event for a disabled endpoint is stored as skipped, never sent: it is in the endpoint's log, and a replay
 * after enabling sends it.
 */
export function deliveryFanOutBatch(deps: FanOutDeps) {
  return async (batch: DomainEvent[]): Promise<Taken | undefined> => {
    const events = batch.filter((e) => isPublicEventType(e.type));
    // A producer bug, not an outage: failing makes the consumer dead-letter it after its retries.
    for (const e of events) if (!isId('acct', e.accountId)) throw new Error(`event ${e.id} has no valid account id`);
    if (!events.length) return undefined;
    // Issued together, the per-account look-ups go to the database as one query.
    const filtered = new Map<string, { accountId: string; n: number }>();
    const targets = await Promise.all(events.map((e) => targetsOf(deps, e, filtered)));
    // Counted before the batch commits: a batch consumed again may count its filtered events twice.
    await deps.endpoints.countFiltered(filtered);
    const now = new Date((deps.now ?? Date.now)());
    const seen = new Set<string>();
    /** Deliveries this process took before they were stored, this batch's and those it already held. */
    const durables: Promise<void>[] = [];
    // plan null: a skipped delivery, which the dispatcher never sees. first: sent before it is stored.
    const planned: Array<{ doc: DeliveryDoc; endpoint: EndpointDoc; plan: Plan | null; first: boolean; occurred?: number }> = [];
    events.forEach((event, i) => {
      const body = deliveryBody(event);
      for (const endpoint of targets[i]!) {
        const _id = deliveryIdOf(event.id, endpoint._id);
        if (seen.has(_id)) continue; // the same event twice in one batch
        seen.add(_id);
        // Consumed again (a rebalance reads from the last commit) while this process holds it: not sent twice.
        const held = deps.dispatcher.held(_id);
        if (held) {
          durables.push(held);
          continue;
        }
        const fields = {
          accountId: event.accountId,
          endpointId: endpoint._id,
          eventId: event.id,
          eventType: event.type,
          requestId: event.requestId,
          body,
          subject: event.subject,
          ...(event.trace ? { trace: event.trace } : {}),
        };
        if (endpoint.status !== 'enabled') {
          planned.push({ doc: skippedDelivery(fields, now), endpoint, plan: null, first: false });
          continue;
        }
        const plan = deps.dispatcher.plan(endpoint._id, body.length);
        const claim = plan === 'defer' ? null : { until: deps.dispatcher.leaseUntil(), owner: deps.dispatcher.owner, instance: deps.dispatcher.instanceId };
        const doc = newDelivery(fields, claim, now);
        planned.push({ doc, endpoint, plan, first: plan !== 'defer' && sendsFirst(endpoint, now.getTime()), occurred: Date.parse(event.occurredAt) });
      }
    });
    const stored = planned.filter((p) => !p.first);
    // Events from before this process was given its partitions may be ones another process sent and stored
    // without committing them (it crashed, or the partition moved): one look-up keeps those from going out again.
    const maybeTaken = planned.filter((p) => p.first && deps.dispatcher.mayHaveBeenTaken(p.occurred!));
    let inserted = new Set<string>();
    /** Deliveries to send first that are stored already (by a predecessor that crashed before its commit). */
    let before = new Set<string>();
    try {
      if (maybeTaken.length) before = await deps.deliveries.existingIds(maybeTaken.map((p) => p.doc._id));
      if (stored.length) inserted = await deps.deliveries.insertMany(stored.map((p) => p.doc));
    } catch (err) {
      for (const p of planned) if (p.plan) deps.dispatcher.unplan(p.endpoint._id, p.plan, p.doc.body.length);
      throw err;
    }
    for (const p of planned) {
      if (!p.plan) continue;
      if (p.first) {
        if (before.has(p.doc._id)) deps.dispatcher.unplan(p.endpoint._id, p.plan, p.doc.body.length);
        else durables.push(deps.dispatcher.sendFirst(p.doc, p.endpoint, p.plan as 'send' | 'queue'));
        continue;
      }
      // A duplicate was scheduled before (the event was consumed again): its first delivery stands.
      if (!inserted.has(p.doc._id)) deps.dispatcher.unplan(p.endpoint._id, p.plan, p.doc.body.length);
      else if (p.plan === 'send') deps.dispatcher.dispatchClaimed(p.doc, p.endpoint);
      else if (p.plan === 'queue') deps.dispatcher.enqueueClaimed(p.doc, p.endpoint);
      // 'defer' (no room in memory): stored unclaimed; the claim query picks it up once there is room.
    }
    if (!durables.length) return undefined;
    const durable = Promise.all(durables).then(() => undefined);
    durable.catch(() => {}); // the consumer acts on a rejection; this keeps one it no longer waits for from being unhandled
    return { durable };
  };
}
