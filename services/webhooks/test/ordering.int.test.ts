import { newId } from '@dap/contracts';
import { waitFor } from '@dap/testing';
import { deliveryStack, sleep, fastDeliveryConfig } from './harness.ts';

/**
 * Ordered endpoints: a receiver fails a subject's first event for its first two attempts (retries 300 ms
 * apart); that subject's second event waits for it, another subject's event does not.
 */
describe('ordered webhook delivery', () => {
  const config = fastDeliveryConfig('0,300,300,300');
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
    await client.call('POST', '/webhooks', { url: `${h.receiver.url}/unordered` }); // the positive control
    const a = newId('src');
    const b = newId('src');
    const a1 = await h.events.publish('source.created', client.accountId, { id: a, name: 'a', type: 'csv' });
    failFirst.add(a1.id);
    const a2 = await h.events.publish('source.deleted', client.accountId, { id: a });
    const b1 = await h.events.publish('source.created', client.accountId, { id: b, name: 'b', type: 'csv' });
    await waitFor(() => h.at('/ordered').filter((r) => r.headers['webhook-id'] === a2.id).length >= 1, { what: 'the second event of a', timeoutMs: 15_000 });
    await sleep(200);
    const ids = (path: string) => h.at(path).map((r) => r.headers['webhook-id'] as string);
    const ordered = ids('/ordered');
    // a1 failed twice then succeeded; a2 went only after that success; b1 did not wait for a1.
    expect(ordered.filter((id) => id === a1.id)).toHaveLength(3);
    expect(ordered.indexOf(a2.id)).toBeGreaterThan(ordered.lastIndexOf(a1.id));
    expect(ordered.indexOf(b1.id)).toBeLessThan(ordered.lastIndexOf(a1.id));
    // Without ordering, a2 goes while a1 is still being retried.
    await waitFor(() => ids('/unordered').filter((id) => id === a1.id).length >= 3, { what: 'a1 retried on the unordered endpoint' });
    const unordered = ids('/unordered');
    expect(unordered.indexOf(a2.id)).toBeLessThan(unordered.lastIndexOf(a1.id));
  });
});
