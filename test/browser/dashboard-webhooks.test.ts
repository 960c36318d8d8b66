import type { Browser, BrowserContext, Page } from 'playwright-core';
import { stackEnv, startReceiver, waitFor } from '@dap/testing';
import { DESKTOP, launchBrowser, newContext, screenshot, startSystem, watchErrors } from './system.ts';

/**
 * The dashboard's webhook observability, in a real browser against the whole system: editing an endpoint
 * (its URL checked by the API as at registration) and its health at a glance in the list. Each step keeps a
 * screenshot.
 */
let system: Awaited<ReturnType<typeof startSystem>>;
let chromium: Awaited<ReturnType<typeof launchBrowser>>;
let browser: Browser;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
let gw = '';
const contexts: BrowserContext[] = [];
const PASSWORD = 'correct horse battery staple';

beforeAll(async () => {
  receiver = await startReceiver((r) => ({ status: r.path === '/broken' ? 500 : 200 }));
  // One attempt per message while the test looks: the first retry waits ten minutes.
  [system, chromium] = await Promise.all([startSystem({ WEBHOOK_RETRY_SCHEDULE_MS: '0,600000' }), launchBrowser()]);
  browser = chromium.browser;
  gw = system.url;
}, 120_000);

afterAll(async () => {
  for (const c of contexts) await c.close().catch(() => undefined);
  await chromium?.close();
  await system?.stop();
  await receiver?.close();
}, 60_000);

async function openPage(): Promise<{ page: Page; errors: string[] }> {
  const context = await newContext(browser, gw, DESKTOP);
  contexts.push(context);
  const page = await context.newPage();
  return { page, errors: watchErrors(page) };
}

const nav = (page: Page, name: string) => page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name, exact: true });
const heading = (page: Page, name: string | RegExp) => page.getByRole('heading', { level: 1, name });

async function signUp(page: Page, accountName: string): Promise<void> {
  await page.goto('/signup');
  await page.getByLabel('Account name').fill(accountName);
  await page.getByLabel('Work email').fill(`${accountName.toLowerCase().replace(/\W+/g, '-')}-${Date.now()}@example.com`);
  await page.getByLabel('Password', { exact: true }).fill(PASSWORD);
  await page.getByRole('button', { name: 'Create account' }).click();
  await heading(page, `Welcome, ${accountName}`).waitFor();
}

describe('the dashboard, webhook pages', () => {
  it('edits an endpoint (URL, events, description), refusing a platform URL as registration does, and shows each endpoint’s health in the list', async () => {
    const { page, errors } = await openPage();
    await signUp(page, 'Hook Health');
    await nav(page, 'Webhooks').click();
    await heading(page, 'Webhooks').waitFor();
    await page.getByRole('button', { name: '+ Add endpoint' }).first().click();
    const add = page.getByRole('dialog', { name: 'Add a webhook endpoint' });
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
    await nav(page, 'Webhooks').click();
    await heading(page, 'Webhooks').waitFor();
    await page.getByRole('button', { name: '+ Add endpoint' }).first().click();
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
});
