import { newId } from '@dap/contracts';
import { waitFor } from '@dap/testing';
import { deliveryIdOf } from '../src/persistence/delivery.repository.ts';
import { deliveryStack, fastDeliveryConfig } from './harness.ts';

/** Retries a minute apart (± 10 % jitter), which come when the test moves the service's clock past them. */
const RETRY_MS = 60_000;
const PAST_RETRY_MS = RETRY_MS * 1.1;

/**
 * Ordered endpoints: a receiver fails a subject's first event for its first two attempts; that subject's
 * second event waits for it, another subject's event does not.
 */
describe('ordered webhook delivery', () => {
  const config = fastDeliveryConfig(`0,${RETRY_MS},${RETRY_MS},${RETRY_MS}`);
  /** Event ids the receivers fail, with attempts so far per path and event. */
  const failFirst = new Set<string>();
  const tries = new Map<string, number>();
  const h = deliveryStack(config, (req) => {
    const id = req.headers['webhook-id'] as string;
    const key = `${req.path} ${id}`;
    const n = (tries.get(key) ?? 0) + 1;
    tries.set(key, n);
    return { status: failFirst.has(id) && n <= 2 ? 500 : 200 };
  });

  it("holds a subject's later event until the earlier one succeeded, and does not hold other subjects", async () => {
    const client = h.client();
    const created = await client.call('POST', '/webhooks', { url: `${h.receiver.url}/ordered`, ordering: 'ordered' });
    expect(created.body.ordering).toBe('ordered');
    const unordered = await client.call('POST', '/webhooks', { url: `${h.receiver.url}/unordered` }); // the positive control
    const a = newId('src');
    const b = newId('src');
    const a1 = await h.events.publish('source.created', client.accountId, { id: a, name: 'a', type: 'csv' });
    failFirst.add(a1.id);
    const a2 = await h.events.publish('source.deleted', client.accountId, { id: a });
    const b1 = await h.events.publish('source.created', client.accountId, { id: b, name: 'b', type: 'csv' });
    const ids = (path: string) => h.at(path).map((r) => r.headers['webhook-id'] as string);
    /** a1 waiting for its retry at both endpoints, after `attempts` failed ones. */
    const a1Waiting = (attempts: number) =>
      waitFor(
        async () => {
          const found = await h.svc.deliveries.raw
            .find({ _id: { $in: [deliveryIdOf(a1.id, created.body.id), deliveryIdOf(a1.id, unordered.body.id)] }, status: 'pending', lockedBy: null })
            .toArray();
          return found.length === 2 && found.every((d) => d.attempts.length === attempts);
        },
        { what: `a1 waiting after ${attempts} attempt(s)` },
      );
    await a1Waiting(1);
    await waitFor(() => ids('/unordered').includes(a2.id) && ids('/ordered').includes(b1.id), { what: 'a2 unordered and b1 ordered' });
    expect(ids('/ordered')).not.toContain(a2.id); // held behind a1 (the unordered endpoint got it)
    await h.elapse(PAST_RETRY_MS);
    await a1Waiting(2);
    expect(ids('/ordered')).not.toContain(a2.id);
    await h.elapse(PAST_RETRY_MS); // a1 succeeds, which releases a2
    await waitFor(() => ids('/ordered').includes(a2.id), { what: 'the second event of a' });
    await h.svc.dispatcher.runDue();
    const ordered = ids('/ordered');
    // a1 failed twice then succeeded; a2 went only after that success; b1 did not wait for a1.
    expect(ordered.filter((id) => id === a1.id)).toHaveLength(3);
    expect(ordered.indexOf(a2.id)).toBeGreaterThan(ordered.lastIndexOf(a1.id));
    expect(ordered.indexOf(b1.id)).toBeLessThan(ordered.lastIndexOf(a1.id));
    // Without ordering, a2 goes while a1 is still being retried.
    expect(ids('/unordered').filter((id) => id === a1.id)).toHaveLength(3);
    expect(ids('/unordered').indexOf(a2.id)).toBeLessThan(ids('/unordered').lastIndexOf(a1.id));
  });
});
