import { eventMatches, isPublicEventType, type DomainEvent } from '@dap/contracts';
import type { Dispatcher } from '../delivery/dispatcher.ts';
import { deliveryBody } from '../delivery/signing.ts';
import { deliveryIdOf, UNLOCKED, type DeliveryDoc, type DeliveryRepository } from '../persistence/delivery.repository.ts';
import type { EndpointDoc, EndpointRepository } from '../persistence/endpoint.repository.ts';

export const DELIVERY_GROUP_ID = 'webhooks-delivery';

export interface FanOutDeps {
  endpoints: EndpointRepository;
  deliveries: DeliveryRepository;
  dispatcher: Pick<Dispatcher, 'tryReserve' | 'release' | 'dispatchClaimed' | 'leaseUntil' | 'owner' | 'kick'>;
}

/** Which of the account's endpoints get this event. */
async function targetsOf(deps: FanOutDeps, event: DomainEvent): Promise<EndpointDoc[]> {
  if (event.type === 'webhook.test') {
    // A test goes to the endpoint it names, whatever its filters.
    const ep = await deps.endpoints.findById(event.accountId, event.data.endpointId);
    return ep && ep.status === 'enabled' ? [ep] : [];
  }
  const occurred = Date.parse(event.occurredAt);
  const all = await deps.endpoints.listEnabled(event.accountId);
  // An endpoint hears what happens after it was registered, even if the log is replayed.
  return all.filter((ep) => eventMatches(ep.events, event.type) && !(occurred < ep.createdAt.getTime()));
}

/**
 * Turns each public event into one stored delivery per matching endpoint, then returns, so the consumer
 * commits the offset only once the deliveries are durable. Inserting an existing `${eventId}:${endpointId}`
 * is a no-op, which makes a redelivered event harmless. Where the dispatcher has a free slot the delivery
 * is inserted already claimed and sent at once, which keeps event-to-delivery latency low.
 */
export function deliveryFanOut(deps: FanOutDeps) {
  return async (event: DomainEvent): Promise<void> => {
    if (!isPublicEventType(event.type)) return;
    const targets = await targetsOf(deps, event);
    if (!targets.length) return;
    const body = deliveryBody(event);
    const now = new Date();
    const planned = targets.map((endpoint) => {
      const claimed = deps.dispatcher.tryReserve(endpoint._id);
      const doc: DeliveryDoc = {
        _id: deliveryIdOf(event.id, endpoint._id),
        accountId: event.accountId,
        endpointId: endpoint._id,
        eventId: event.id,
        eventType: event.type,
        requestId: event.requestId,
        body,
        status: 'pending',
        attempts: [],
        nextAttemptAt: now,
        lockedUntil: claimed ? deps.dispatcher.leaseUntil() : UNLOCKED,
        lockedBy: claimed ? deps.dispatcher.owner : null,
        createdAt: now,
        updatedAt: now,
        finishedAt: null,
      };
      return { doc, endpoint, claimed };
    });
    let inserted: Set<string>;
    try {
      inserted = await deps.deliveries.insertMany(planned.map((p) => p.doc));
    } catch (err) {
      for (const p of planned) if (p.claimed) deps.dispatcher.release(p.endpoint._id);
      throw err;
    }
    let waiting = false;
    for (const p of planned) {
      if (!p.claimed) waiting ||= inserted.has(p.doc._id);
      else if (inserted.has(p.doc._id)) deps.dispatcher.dispatchClaimed(p.doc, p.endpoint);
      else deps.dispatcher.release(p.endpoint._id);
    }
    // No slot was free for some: a claim pass picks them up as soon as one is.
    if (waiting) deps.dispatcher.kick();
  };
}
