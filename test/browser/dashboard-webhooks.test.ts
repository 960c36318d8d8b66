import type { Page } from 'playwright-core';
import { stackEnv, waitFor } from '@dap/testing';
import { browserSuite, PHONE, postFromPage, receiverSuite, reloadUntilVisible, screenshot, WIDE, heading, nav } from './system.ts';

/**
 * The dashboard's webhook observability, in a real browser against the whole system: editing an endpoint
 * (its URL checked by the API as at registration) and its health at a glance in the list. Each step keeps a
 * screenshot.
 */
/** Paths that answer 500 (with a body and a header of their own), 410, or 429 with Retry-After until taken out. */
const flaky = new Map<string, 500 | 410 | 429>();

// One attempt per message while the test looks: the first retry waits ten minutes.
const suite = browserSuite({ WEBHOOK_RETRY_SCHEDULE_MS: '0,600000' });

const receiver = receiverSuite((r): { status: number; headers?: Record<string, string>; body?: string } => {
  if (r.path === '/broken') return { status: 500 };
  const answer = flaky.get(r.path);
  if (answer === 500) return { status: 500, headers: { 'x-receiver-trace': 'trace-42' }, body: '{"error":"database locked","retryable":true}' };
  if (answer === 410) return { status: 410 };
  if (answer === 429) return { status: 429, headers: { 'retry-after': '120' } };
  return { status: 200 };
});

/** The Webhooks page, from the main navigation, with its "Add a webhook endpoint" dialog open. */
async function openAddEndpoint(page: Page) {
  await nav(page, 'Webhooks').click();
  await heading(page, 'Webhooks').waitFor();
  await page.getByRole('button', { name: '+ Add endpoint' }).first().click();
  return page.getByRole('dialog', { name: 'Add a webhook endpoint' });
}

describe('the dashboard, webhook pages', () => {
  it('edits an endpoint (URL, events, description), refusing a platform URL as registration does, and shows each endpoint’s health in the list', async () => {
    const { page, errors } = await suite.signedIn('Hook Health');
    const add = await openAddEndpoint(page);
    await add.getByLabel('Endpoint URL').fill(`${receiver.url}/ok`);
    await add.getByRole('button', { name: 'Add endpoint' }).click();
    await page.getByRole('dialog', { name: 'Endpoint added' }).getByRole('button', { name: 'I have saved it' }).click();
    await page.getByText('No deliveries yet').waitFor();
    const webhookId = page.url().split('/').pop()!;

    // One message that succeeds, at the first URL.
    await page.getByRole('button', { name: 'Send test event' }).click();
    await page.getByTestId('deliveries').locator('tr[data-status="succeeded"]').first().waitFor({ timeout: 20_000 });
    expect(receiver.received.filter((r) => r.path === '/ok')).toHaveLength(1);

    // Edit: the platform's own MongoDB is refused with the API's reason, on the URL field, and nothing changes.
    await page.getByRole('button', { name: 'Edit', exact: true }).click();
    const edit = page.getByRole('dialog', { name: 'Edit endpoint' });
    expect(await edit.getByLabel('Endpoint URL').inputValue()).toBe(`${receiver.url}/ok`);
    const mongo = new URL(stackEnv().MONGO_URL);
    await edit.getByLabel('Endpoint URL').fill(`http://${mongo.host}/x`);
    await edit.getByRole('button', { name: 'Save changes' }).click();
    await edit.getByText(/is one of this platform's own endpoints/).waitFor();
    expect(await edit.getByLabel('Endpoint URL').getAttribute('aria-invalid')).toBe('true');
    await screenshot(page, 'webhook-edit-refused');

    // A good URL, a narrower event selection and a description are saved.
    await edit.getByLabel('Endpoint URL').fill(`${receiver.url}/broken`);
    await edit.getByText('Selected events').click();
    await edit.getByRole('checkbox', { name: 'report.*' }).check();
    await edit.getByLabel('Description').fill('the broken one');
    await screenshot(page, 'webhook-edit');
    await edit.getByRole('button', { name: 'Save changes' }).click();
    await edit.waitFor({ state: 'detached' });
    await heading(page, `${receiver.url}/broken`).waitFor();
    await page.getByText('the broken one').waitFor();
    await page.getByText('report.*', { exact: true }).waitFor();

    // The next message goes to the new URL, which answers 500.
    await page.getByRole('button', { name: 'Send test event' }).click();
    await waitFor(() => receiver.received.some((r) => r.path === '/broken'), { what: 'the message at the new URL', timeoutMs: 20_000 });
    expect(receiver.received.filter((r) => r.path === '/broken')).toHaveLength(1);
    expect(receiver.received.filter((r) => r.path === '/ok')).toHaveLength(1);

    // The delivery log's filters: by status, and a time range the API refuses names its field.
    const log = page.getByTestId('deliveries');
    await log.locator('tr[data-delivery-id]').nth(1).waitFor();
    expect(await log.locator('tr[data-delivery-id]').count()).toBe(2);
    const filters = page.getByRole('group', { name: 'Filter deliveries' });
    await filters.getByLabel('Status').selectOption('succeeded');
    await waitFor(async () => (await log.locator('tr[data-delivery-id]').count()) === 1, { what: 'the succeeded delivery alone' });
    expect(await log.locator('tr[data-status="succeeded"]').count()).toBe(1);
    await screenshot(page, 'webhook-deliveries-filtered');
    await filters.getByLabel('Status').selectOption('cancelled');
    await page.getByText('No deliveries match these filters').waitFor();
    await filters.getByLabel('Status').selectOption('');
    await filters.getByLabel('Event type').selectOption('webhook.test');
    await filters.getByLabel('From').fill('2026-03-02T10:00');
    await filters.getByLabel('Until').fill('2026-03-01T10:00');
    await filters.getByText('until must be after since').waitFor();
    expect(await filters.getByLabel('Until').getAttribute('aria-invalid')).toBe('true');
    // A refused query is not an empty log.
    expect(await page.getByText('No deliveries match these filters').count()).toBe(0);
    await screenshot(page, 'webhook-deliveries-bad-range');
    await filters.getByLabel('From').fill('');
    await filters.getByLabel('Until').fill('');
    await log.locator('tr[data-delivery-id]').nth(1).waitFor();
    expect(await log.locator('tr[data-delivery-id]').count()).toBe(2);

    // A second, healthy endpoint beside it: the positive control for the warning badge.
    await openAddEndpoint(page);
    await add.getByLabel('Endpoint URL').fill(`${receiver.url}/fine`);
    await add.getByRole('button', { name: 'Add endpoint' }).click();
    await page.getByRole('dialog', { name: 'Endpoint added' }).getByRole('button', { name: 'I have saved it' }).click();
    await page.getByRole('button', { name: 'Send test event' }).click();
    await page.getByTestId('deliveries').locator('tr[data-status="succeeded"]').first().waitFor({ timeout: 20_000 });
    const fineId = page.url().split('/').pop()!;

    await nav(page, 'Webhooks').click();
    await heading(page, 'Webhooks').waitFor();
    const broken = page.locator(`tr[data-webhook-id="${webhookId}"]`);
    const fine = page.locator(`tr[data-webhook-id="${fineId}"]`);
    await broken.locator('[data-status="failing"]').getByText('Failing').waitFor();
    expect(await broken.locator('[data-status="enabled"]').count()).toBe(0);
    expect(((await broken.getByTestId('endpoint-health').textContent()) ?? '').replace(/\s+/g, ' ')).toMatch(/^50% of 2 attempts ?last failure just now$/);
    await fine.locator('[data-status="enabled"]').getByText('Enabled').waitFor();
    expect(await fine.locator('[data-status="failing"]').count()).toBe(0);
    expect(((await fine.getByTestId('endpoint-health').textContent()) ?? '').replace(/\s+/g, ' ')).toBe('100% of 1 attempt');
    await screenshot(page, 'webhooks-health');
    // The refused PATCH and the refused time range above are the only failed requests the browser saw.
    expect(errors).toEqual([
      'Failed to load resource: the server responded with a status of 422 (Unprocessable Entity)',
      'Failed to load resource: the server responded with a status of 400 (Bad Request)',
    ]);
  }, 120_000);
  it('opens a delivery to its payload, headers and answers, retries a waiting retry now, and replays what failed since a time', async () => {
    const { page, errors } = await suite.signedIn('Hook Detail', WIDE);
    const add = await openAddEndpoint(page);
    await add.getByLabel('Endpoint URL').fill(`${receiver.url}/flaky`);
    await add.getByRole('button', { name: 'Add endpoint' }).click();
    const created = page.getByRole('dialog', { name: 'Endpoint added' });
    const secret = ((await created.getByTestId('secret').textContent()) ?? '').trim();
    expect(secret).toMatch(/^whsec_/);
    await created.getByRole('button', { name: 'I have saved it' }).click();
    await page.getByText('No deliveries yet').waitFor();
    const at = () => receiver.received.filter((r) => r.path === '/flaky');

    // The receiver fails the first attempt; the next retry is ten minutes away.
    flaky.set('/flaky', 500);
    await page.getByRole('button', { name: 'Send test event' }).click();
    const log = page.getByTestId('deliveries');
    const row = log.locator('tr[data-status="pending"]').first();
    await row.getByRole('button', { name: 'Retry now' }).waitFor({ timeout: 20_000 });
    expect(at()).toHaveLength(1);
    const messageId = (await row.getAttribute('data-delivery-id'))!;
    expect(at()[0]!.headers['webhook-id']).toBe(messageId);

    await row.getByRole('button', { name: 'Details' }).click();
    const drawer = page.getByRole('dialog', { name: 'Message' });
    const detail = drawer.getByTestId('delivery-detail');
    await detail.waitFor();
    expect(JSON.parse((await drawer.getByTestId('payload').textContent()) ?? '')).toEqual(JSON.parse(at()[0]!.body));
    const first = drawer.getByTestId('attempts').locator('tr[data-attempt="1"]');
    await first.getByText('500', { exact: true }).waitFor();
    await first.getByText('HTTP 500').waitFor();
    // The latest attempt is open: the answer's header and body, and the headers sent with the signature.
    const exchange = drawer.getByTestId('attempt-1-detail');
    await exchange.getByText('trace-42').waitFor();
    expect(JSON.parse((await exchange.getByTestId('attempt-1-body').textContent()) ?? '')).toEqual({ error: 'database locked', retryable: true });
    const sent = exchange.getByRole('definition');
    expect(await exchange.getByText(at()[0]!.headers['webhook-signature'] as string, { exact: true }).count()).toBe(1);
    expect(await sent.count()).toBeGreaterThan(5);
    // The signing secret is nowhere in the panel (the signature made with it is).
    expect(await drawer.textContent()).not.toContain(secret.slice('whsec_'.length));
    await screenshot(page, 'webhook-delivery-detail');

    // Retry now: the waiting retry goes out at once, and succeeds.
    flaky.delete('/flaky');
    await drawer.getByRole('button', { name: 'Retry now' }).click();
    await page.locator('[data-testid="delivery-detail"][data-status="succeeded"]').waitFor({ timeout: 20_000 });
    await drawer.getByTestId('attempts').locator('tr[data-attempt="2"]').getByText('200', { exact: true }).waitFor();
    expect(at().map((r) => r.headers['webhook-id'])).toEqual([messageId, messageId]);
    await screenshot(page, 'webhook-delivery-retried');

    // The phone layout of the same panel.
    await page.setViewportSize(PHONE);
    await drawer.getByTestId('attempt-2-detail').waitFor();
    // The drawer covers the phone's screen; the page behind it is not what this shows.
    await screenshot(page, 'webhook-delivery-detail-phone', { fullPage: false });
    await page.setViewportSize(WIDE);
    await drawer.getByRole('button', { name: 'Close' }).click();
    await log.locator(`tr[data-delivery-id="${messageId}"][data-status="succeeded"]`).waitFor();

    // A message answered 410 fails for good and disables the endpoint; once enabled, a replay since an hour ago
    // queues that one message (the delivered one is left alone), and a second replay queues nothing.
    flaky.set('/flaky', 410);
    await page.getByRole('button', { name: 'Send test event' }).click();
    await waitFor(() => at().length === 3, { what: 'the 410 attempt', timeoutMs: 20_000 });
    const alert = page.getByText('This endpoint is disabled');
    await reloadUntilVisible(page, alert, 'the endpoint disabled after a 410');
    expect(await page.getByRole('button', { name: 'Replay since…' }).isDisabled()).toBe(true);
    flaky.delete('/flaky');
    await page.getByRole('button', { name: 'Enable endpoint' }).click();
    await alert.waitFor({ state: 'detached' });
    await page.getByRole('button', { name: 'Replay since…' }).click();
    const replay = page.getByRole('dialog', { name: 'Replay messages' });
    await replay.getByLabel('Since').fill(new Date(Date.now() - 3_600_000).toISOString().slice(0, 16)); // the browser runs in UTC
    await replay.getByRole('button', { name: 'Replay', exact: true }).click();
    const result = replay.getByTestId('replay-result');
    await result.or(replay.getByRole('alert')).first().waitFor();
    // The 410 message, and any other that came while the endpoint was disabled (recorded as skipped).
    const queued = Number(/^(\d+) messages? will be sent again; watch the deliveries log\.$/.exec((await result.textContent()) ?? '')?.[1]);
    expect(queued).toBeGreaterThanOrEqual(1);
    await screenshot(page, 'webhook-replay');
    await waitFor(() => at().length === 3 + queued, { what: 'the replayed messages', timeoutMs: 20_000 });
    const replayed = at()
      .slice(3)
      .map((r) => r.headers['webhook-id']);
    // Each queued message once; the failed one among them, the delivered one not.
    expect(new Set(replayed).size).toBe(queued);
    expect(replayed).toContain(at()[2]!.headers['webhook-id']);
    expect(replayed).not.toContain(messageId);
    await page.setViewportSize(PHONE);
    await screenshot(page, 'webhook-replay-phone', { fullPage: false });
    await page.setViewportSize(WIDE);
    await replay.getByRole('button', { name: 'Done' }).click();
    await page.getByRole('button', { name: 'Replay since…' }).click();
    await replay.getByRole('button', { name: 'Replay', exact: true }).click();
    await replay
      .getByTestId('replay-result')
      .getByText(/reached the endpoint or is still being sent/)
      .waitFor();
    await replay.getByRole('button', { name: 'Done' }).click();
    await log.locator('tr[data-status="succeeded"]').nth(queued).waitFor({ timeout: 20_000 });
    expect(at()).toHaveLength(3 + queued);
    expect(errors).toEqual([]);
  }, 180_000);

  it('sends only the events an endpoint’s filter matches, in order and rate-limited, shows what it filtered out, names a bad filter’s fault on the field, and shows a receiver’s Retry-After and the pause it causes', async () => {
    const { page, errors } = await suite.signedIn('Hook Filters', WIDE);
    const add = await openAddEndpoint(page);
    await add.getByLabel('Endpoint URL').fill(`${receiver.url}/picky`);
    await add.getByRole('checkbox', { name: 'Ordered delivery' }).check();
    await add.getByLabel('Max deliveries per second').fill('5');
    // Not JSON: refused by the form before any request, on the field.
    const filterField = add.getByLabel('Content filter');
    await filterField.fill('{"path": "$.type"');
    await add.getByRole('button', { name: 'Add endpoint' }).click();
    await add.getByText(/Not valid JSON/).waitFor();
    expect(await filterField.getAttribute('aria-invalid')).toBe('true');
    const wanted = {
      and: [
        { path: '$.type', op: 'eq', value: 'source.created' },
        { path: '$.data.name', op: 'in', value: ['wanted ledger'] },
      ],
    };
    await filterField.fill(JSON.stringify(wanted));
    expect(await filterField.getAttribute('aria-invalid')).toBeNull();
    await screenshot(page, 'webhook-create-filter');
    await add.getByRole('button', { name: 'Add endpoint' }).click();
    await page.getByRole('dialog', { name: 'Endpoint added' }).getByRole('button', { name: 'I have saved it' }).click();
    await page.getByText('No deliveries yet').waitFor();
    const webhookId = page.url().split('/').pop()!;
    const at = () => receiver.received.filter((r) => r.path === '/picky');

    // Two sources through the API with the session: one event the filter matches, the rest it does not.
    const createSource = async (name: string) => {
      const r = await postFromPage<{ id: string }>(page, '/sources', { type: 'inline', name, rows: [{ n: 1 }, { n: 2 }] });
      return { status: r.status, id: r.json.id };
    };
    const other = await createSource('other ledger');
    const kept = await createSource('wanted ledger');
    expect([other.status, kept.status]).toEqual([201, 201]);
    await waitFor(() => at().length === 1, { what: 'the matching event', timeoutMs: 20_000 });
    // The other source's events (its source.created at least) are counted as filtered out.
    const filteredCount = page.getByTestId('filtered-count');
    await waitFor(
      async () => {
        await page.reload();
        return Number((await filteredCount.textContent({ timeout: 5_000 })) ?? 0) >= 1;
      },
      { what: 'the filtered events counted', timeoutMs: 30_000 },
    );
    const sent = at().map((r) => JSON.parse(r.body) as { type: string; data: { id: string; name: string } });
    expect(sent).toEqual([expect.objectContaining({ type: 'source.created', data: expect.objectContaining({ id: kept.id, name: 'wanted ledger' }) })]);
    const endpoint = page.getByRole('region', { name: 'Endpoint', exact: true });
    expect(JSON.parse((await page.getByTestId('endpoint-filter').textContent()) ?? '')).toEqual(wanted);
    await endpoint.getByText('Ordered: per source, model or report').waitFor();
    expect(await endpoint.getByText('Max deliveries per second').locator('xpath=following-sibling::*[1]').textContent()).toBe('5');
    await screenshot(page, 'webhook-filtered');

    // The list shows the same at a glance.
    await nav(page, 'Webhooks').click();
    const row = page.locator(`tr[data-webhook-id="${webhookId}"]`);
    const settings = row.getByTestId('delivery-settings');
    await settings.waitFor();
    expect(Number(/Filter: (\d+) filtered out/.exec((await settings.textContent()) ?? '')?.[1])).toBeGreaterThanOrEqual(1);
    await settings.getByText('Ordered', { exact: true }).waitFor();
    await settings.getByText('≤ 5/s', { exact: true }).waitFor();
    await screenshot(page, 'webhooks-settings');
    await page.setViewportSize(PHONE);
    await screenshot(page, 'webhooks-settings-phone');
    await page.setViewportSize(WIDE);

    // Edit: a filter the API refuses is named at its exact spot, on the field; nothing changes.
    await row.getByRole('link').first().click();
    await page.getByRole('button', { name: 'Edit', exact: true }).click();
    const edit = page.getByRole('dialog', { name: 'Edit endpoint' });
    const editFilter = edit.getByLabel('Content filter');
    expect(JSON.parse(await editFilter.inputValue())).toEqual(wanted);
    expect(await edit.getByRole('checkbox', { name: 'Ordered delivery' }).isChecked()).toBe(true);
    expect(await edit.getByLabel('Max deliveries per second').inputValue()).toBe('5');
    await editFilter.fill(JSON.stringify({ and: [{ path: 'data.rowCount', op: 'gt', value: 1 }] }));
    await edit.getByRole('button', { name: 'Save changes' }).click();
    await edit.getByText(/filter\.and\.0\.path: must be a JSONPath/).waitFor();
    expect(await editFilter.getAttribute('aria-invalid')).toBe('true');
    await screenshot(page, 'webhook-edit-filter-refused');
    await page.setViewportSize(PHONE);
    await edit.getByText(/filter\.and\.0\.path: must be a JSONPath/).scrollIntoViewIfNeeded();
    await screenshot(page, 'webhook-edit-filter-refused-phone', { fullPage: false });
    await page.setViewportSize(WIDE);

    // A filter that lets the test event through, no rate limit: saved.
    await editFilter.fill(JSON.stringify({ path: '$.type', op: 'in', value: ['webhook.test', 'source.created'] }));
    await edit.getByLabel('Max deliveries per second').fill('');
    await edit.getByRole('button', { name: 'Save changes' }).click();
    await edit.waitFor({ state: 'detached' });
    await page.getByText('Unlimited', { exact: true }).waitFor();
    expect(JSON.parse((await page.getByTestId('endpoint-filter').textContent()) ?? '')).toEqual({ path: '$.type', op: 'in', value: ['webhook.test', 'source.created'] });
    // Not paused yet: the positive control for the badge below.
    expect(await page.getByTestId('paused-until').count()).toBe(0);

    // The receiver pushes back: 429 with Retry-After: 120.
    flaky.set('/picky', 429);
    await page.getByRole('button', { name: 'Send test event' }).click();
    await waitFor(() => at().length === 2, { what: 'the 429 attempt', timeoutMs: 20_000 });
    const log = page.getByTestId('deliveries');
    const pending = log.locator('tr[data-status="pending"]').first();
    await pending.getByRole('button', { name: 'Retry now' }).waitFor({ timeout: 20_000 });
    await pending.getByRole('button', { name: 'Details' }).click();
    const drawer = page.getByRole('dialog', { name: 'Message' });
    const first = drawer.getByTestId('attempts').locator('tr[data-attempt="1"]');
    await first.getByText('429', { exact: true }).waitFor();
    await first.getByText('Retry-After 120 s', { exact: true }).waitFor();
    await screenshot(page, 'webhook-retry-after');
    await drawer.getByRole('button', { name: 'Close' }).click();
    await page.reload();
    const paused = page.getByTestId('paused-until');
    await paused.waitFor();
    const until = /^Paused until (.+)$/.exec(((await paused.textContent()) ?? '').trim())?.[1];
    expect(until).toBeDefined();
    await screenshot(page, 'webhook-paused');
    await page.setViewportSize(PHONE);
    await screenshot(page, 'webhook-paused-phone');
    await page.setViewportSize(WIDE);
    await nav(page, 'Webhooks').click();
    await row.getByTestId('paused-until').waitFor();
    flaky.delete('/picky');
    // Still only the one source event reached the receiver; the rest were filtered out.
    expect(at().filter((r) => (JSON.parse(r.body) as { type: string }).type !== 'webhook.test')).toHaveLength(1);
    expect(errors).toEqual(['Failed to load resource: the server responded with a status of 400 (Bad Request)']);
  }, 180_000);
});
