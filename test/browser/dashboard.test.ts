import type { Page } from 'playwright-core';
import { waitFor } from '@dap/testing';
import { browserSuite, connectRows, receiverSuite, rollKey, go, PHONE, reloadUntilVisible, runQuery, screenshot, PASSWORD, heading, nav, signUp } from './system.ts';

/**
 * The dashboard in a real browser (Debian's Chromium, headless) against the whole system, every service
 * its own process: the stories a customer goes through, with screenshots of each main page.
 */
/** Paths the receiver answers 410 Gone on (which disables their endpoint). */
const gonePaths = new Set<string>();

const suite = browserSuite();
const receiver = receiverSuite((r) => ({ status: gonePaths.has(r.path) ? 410 : 200 }));

/** Every form control on the page has an accessible name, and the page has one h1. */
async function expectAccessibleBasics(page: Page): Promise<void> {
  // Runs in the page (a string, since this file is type-checked without the DOM library).
  const unlabelled = (await page.evaluate(`[...document.querySelectorAll('input, select, textarea')]
    .filter((el) => el.type !== 'hidden')
    .filter((el) => !(el.labels && el.labels.length) && !el.getAttribute('aria-label') && !el.getAttribute('aria-labelledby'))
    .map((el) => el.outerHTML.slice(0, 120))`)) as string[];
  expect(unlabelled).toEqual([]);
  expect(await page.locator('h1').count()).toBe(1);
}

const bearer = (key: string) => ({ headers: { authorization: `Bearer ${key}` } });

describe('the dashboard', () => {
  it('is served by the gateway with a strict CSP, and client-side routes survive a reload', async () => {
    const res = await fetch(`${suite.url}/settings/api-keys`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    const csp = res.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("style-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain('unsafe');
    expect((await fetch(`${suite.url}/v1/nope`)).headers.get('content-type')).toMatch(/problem\+json/);
    expect((await fetch(`${suite.url}/healthz`)).headers.get('content-type')).toMatch(/json/);
  });

  it('story 1: sign up, create a key that works, roll it, revoke it in the UI and it gets 401; log out and in', async () => {
    const { page, errors } = await suite.openPage();
    await page.goto('/');
    await page.waitForURL(/\/login/);
    await heading(page, 'Log in').waitFor();
    await screenshot(page, 'login');

    await page.getByRole('link', { name: 'Create an account' }).click();
    await heading(page, 'Create your account').waitFor();
    // The API's field errors show next to their fields.
    await page.getByLabel('Account name').fill('Analytical Engines');
    await page.getByLabel('Work email').fill('not-an-email');
    await page.getByLabel('Password', { exact: true }).fill('short');
    await page.getByRole('button', { name: 'Create account' }).click();
    await page.getByText('Use at least 10 characters').waitFor();
    expect(await page.getByLabel('Password', { exact: true }).getAttribute('aria-invalid')).toBe('true');
    await screenshot(page, 'signup-errors');
    const email = await signUp(page, 'Analytical Engines');
    await page.getByRole('heading', { name: 'Get started' }).waitFor();
    await screenshot(page, 'overview');

    await go(page, 'API Keys');
    await page.getByText('No active keys').waitFor();
    await expectAccessibleBasics(page);
    await page.getByRole('button', { name: '+ Create API key' }).click();
    const dialog = page.getByRole('dialog', { name: 'Create an API key' });
    await dialog.getByRole('button', { name: 'Create key' }).click();
    await dialog.getByText('Give the key a name you will recognise later').waitFor();
    await dialog.getByLabel('Name').fill('reporting job');
    await dialog.getByText('Restricted').click();
    await dialog.getByRole('checkbox', { name: 'analytics:read' }).uncheck();
    await dialog.getByLabel('Expires').selectOption('90');
    await screenshot(page, 'api-key-create');
    await dialog.getByRole('button', { name: 'Create key' }).click();
    const created = page.getByRole('dialog', { name: 'Key “reporting job” created' });
    const secret = ((await created.getByTestId('secret').textContent()) ?? '').trim();
    expect(secret).toMatch(/^dap_sk_\w+$/);
    await created.getByText('you will not see it again').waitFor();
    await screenshot(page, 'api-key-secret');

    // The key works from outside the browser, only for its scope.
    expect((await fetch(`${suite.url}/v1/sources`, bearer(secret))).status).toBe(200);
    expect((await fetch(`${suite.url}/v1/models`, bearer(secret))).status).toBe(403);

    await created.getByRole('button', { name: 'I have saved it' }).click();
    let row = page.getByTestId('key-row').filter({ hasText: 'reporting job' });
    await row.getByText(`dap_sk_…${secret.slice(-4)}`).waitFor();
    await row.getByText('sources:read').waitFor();
    await row.getByText(/^Expires /).waitFor();
    expect(await row.getByText('analytics:read').count()).toBe(0);
    await screenshot(page, 'api-keys');

    // Roll it with no grace period: the new secret works at once, the old one stops.
    const newSecret = await rollKey(page, 'reporting job', '0');
    expect(newSecret).toMatch(/^dap_sk_\w+$/);
    expect(newSecret).not.toBe(secret);
    expect((await fetch(`${suite.url}/v1/sources`, bearer(newSecret))).status).toBe(200);
    await waitFor(async () => (await fetch(`${suite.url}/v1/sources`, bearer(secret))).status === 401, { timeoutMs: 5_000, intervalMs: 100, what: 'the rolled secret refused' });

    // Revoke the new key in the UI: it is refused within seconds.
    row = page.getByTestId('key-row').filter({ hasText: `dap_sk_…${newSecret.slice(-4)}` });
    await row.getByRole('button', { name: 'Revoke key reporting job' }).click();
    const confirm = page.getByRole('dialog', { name: 'Revoke “reporting job”?' });
    await confirm.getByRole('button', { name: 'Revoke key' }).click();
    await confirm.waitFor({ state: 'hidden' });
    await page.getByText('No active keys').waitFor();
    await page.getByRole('status').getByText('Key “reporting job” revoked').waitFor();
    await waitFor(async () => (await fetch(`${suite.url}/v1/sources`, bearer(newSecret))).status === 401, { timeoutMs: 5_000, intervalMs: 100, what: 'the revoked key refused' });
    await page.getByRole('button', { name: 'Show', exact: true }).click();
    await page
      .getByTestId('key-row')
      .filter({ hasText: newSecret.slice(-4) })
      .getByText('Revoked', { exact: true })
      .waitFor();

    await go(page, 'Plan & usage');
    await page.getByTestId('plan').getByText('100').first().waitFor();
    await page
      .getByTestId('usage-now')
      .getByText(/of 100 requests/)
      .waitFor();
    await page.locator('svg[data-chart="bar"]').first().waitFor();
    await screenshot(page, 'plan-usage');

    // Log out, then back in: the session cookie and CSRF token come and go with it.
    await page.getByRole('button', { name: 'Log out' }).click();
    await heading(page, 'Log in').waitFor();
    await page.goto('/settings/api-keys');
    await page.waitForURL(/\/login\?next=/);
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password', { exact: true }).fill('wrong password!!');
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByText('Wrong email or password').waitFor();
    await page.getByLabel('Password', { exact: true }).fill(PASSWORD);
    await page.getByRole('button', { name: 'Log in' }).click();
    await heading(page, 'API Keys').waitFor();
    expect(new URL(page.url()).pathname).toBe('/settings/api-keys');
    expect(errors.filter((e) => !/status of 40[13]/.test(e))).toEqual([]);
  }, 90_000);

  it('story 2: connect an inline source, wait for it, chart a grouped query and a time series', async () => {
    const { page, errors } = await suite.signedIn('Orders Team');
    await go(page, 'Sources');
    await page.getByText('No sources yet').waitFor();
    await page.getByRole('link', { name: '+ Connect source' }).click();
    await heading(page, 'Connect a source').waitFor();
    await expectAccessibleBasics(page);
    const rows = [
      { country: 'FR', amount: 10.5, units: 1, at: '2025-03-01T10:00:00Z' },
      { country: 'FR', amount: 4.5, units: 3, at: '2025-03-01T12:00:00Z' },
      { country: 'DE', amount: 7, units: 2, at: '2025-03-02T09:00:00Z' },
      { country: 'US', amount: 20, units: 5, at: '2025-03-03T15:00:00Z' },
      { country: 'US', amount: 1, units: 1, at: '2025-03-03T18:00:00Z' },
      { country: 'JP', amount: 3, units: 4, at: '2025-03-04T08:00:00Z' },
    ];
    await page.getByLabel('Name').fill('orders');
    // A malformed body is caught before it is sent, next to its field.
    await page.getByLabel('Rows (JSON array of objects)').fill('[{"country": ');
    await page.getByRole('button', { name: 'Connect source' }).click();
    await page.getByText(/This is not valid JSON/).waitFor();
    await page.getByLabel('Rows (JSON array of objects)').fill(JSON.stringify(rows));
    await screenshot(page, 'source-connect');
    await page.getByRole('button', { name: 'Connect source' }).click();
    await heading(page, /orders/).waitFor();
    await page.locator('[data-status="ready"]').first().waitFor({ timeout: 30_000 });
    await page.getByTestId('row-count').getByText('6').waitFor();
    await page.getByRole('cell', { name: 'amount' }).waitFor();
    await screenshot(page, 'source-detail');

    await page.getByRole('link', { name: 'Explore data' }).click();
    await heading(page, 'Explore').waitFor();
    await expectAccessibleBasics(page);
    await page.getByRole('checkbox', { name: /country/ }).check();
    await page.getByRole('button', { name: '+ Add measure' }).click();
    await page.getByLabel('Measure 2 field').selectOption('amount');
    await page.getByLabel('Measure 2 name (optional)').fill('revenue');
    await page.getByLabel('Sort by').selectOption('revenue');
    const bars = page.locator('svg[data-chart="bar"] rect.chart-bar');
    await runQuery(page, async () => (await bars.count()) > 0);
    expect(await bars.count()).toBe(4);
    expect(await page.getByTestId('result-table').locator('tbody tr').count()).toBe(4);
    // The chart shows the chosen measure; the default is the first one (count), ordered by revenue desc.
    expect(await bars.evaluateAll((els) => els.map((e) => [e.getAttribute('data-label'), Number(e.getAttribute('data-value'))]))).toEqual([
      ['US', 2],
      ['FR', 2],
      ['DE', 1],
      ['JP', 1],
    ]);
    await page.getByLabel('Chart measure').selectOption('revenue');
    expect(await bars.evaluateAll((els) => els.map((e) => Number(e.getAttribute('data-value'))))).toEqual([21, 15, 7, 3]);
    await screenshot(page, 'explore-grouped');
    // Explore's runs store nothing; Save as report keeps this result as a report.
    await page.getByRole('button', { name: 'Save as report' }).click();
    await page.waitForURL(/\/analytics\/reports\/rpt_/);
    await page.locator('svg[data-chart="bar"] rect.chart-bar').first().waitFor();
    await page.goBack();
    await heading(page, 'Explore').waitFor();
    await bars.first().waitFor();

    // Over time: one point per day.
    await page.getByRole('checkbox', { name: /country/ }).uncheck();
    await page.getByLabel('Sort by').selectOption('');
    await page.getByLabel('Time field').selectOption('at');
    await page.getByLabel('Time granularity').selectOption('day');
    await page.getByRole('button', { name: 'Run query' }).click();
    const points = page.locator('svg[data-chart="line"] circle.chart-point');
    await page.locator('svg[data-chart="line"]').waitFor();
    // One point per day for the charted measure, and the measure picker switches it.
    expect(await points.count()).toBe(4);
    expect(await points.evaluateAll((els) => els.map((e) => Number(e.getAttribute('data-value'))))).toEqual([2, 1, 2, 1]);
    await page.getByLabel('Chart measure').selectOption('revenue');
    expect(await points.evaluateAll((els) => els.map((e) => Number(e.getAttribute('data-value'))))).toEqual([15, 7, 21, 3]);
    await screenshot(page, 'explore-time');
    await page.getByRole('button', { name: 'Save as report' }).click();
    await page.waitForURL(/\/analytics\/reports\/rpt_/);

    await go(page, 'Reports');
    await page.getByRole('table', { name: 'Reports' }).locator('tbody tr').nth(1).waitFor();
    await screenshot(page, 'reports');
    await page.getByRole('link', { name: /count, revenue by country/ }).click();
    await page.locator('svg[data-chart="bar"] rect.chart-bar').first().waitFor();
    expect(await page.locator('svg[data-chart="bar"] rect.chart-bar').count()).toBe(4);
    await screenshot(page, 'report-detail');

    await go(page, 'Sources');
    await screenshot(page, 'sources');

    await go(page, 'Models');
    await page.getByRole('link', { name: 'forecast' }).click();
    await heading(page, /forecast/).waitFor();
    await page.getByRole('button', { name: 'Form', exact: true }).click();
    await page.getByRole('button', { name: 'Predict' }).click();
    await page.locator('svg[data-chart="line"] path.chart-band').first().waitFor();
    await page.getByTestId('serving').getByText('Requests').waitFor();
    await page.getByText('Error, lower is better', { exact: true }).waitFor();
    await screenshot(page, 'model-detail');
    await go(page, 'Models');
    await screenshot(page, 'models');
    await go(page, 'Overview', /Welcome/);
    await page.getByText('Source ready').first().waitFor();
    await screenshot(page, 'overview-with-data');
    expect(errors).toEqual([]);
  }, 90_000);

  it('story 3: create a webhook (secret shown once), send a test event, and see the delivery in the log', async () => {
    const { page, errors } = await suite.signedIn('Hooks Inc');
    await go(page, 'Webhooks');
    await page.getByRole('button', { name: '+ Add endpoint' }).first().click();
    const dialog = page.getByRole('dialog', { name: 'Add a webhook endpoint' });
    await dialog.getByLabel('Endpoint URL').fill('ftp://example.com');
    await dialog.getByRole('button', { name: 'Add endpoint' }).click();
    await dialog.getByText(/Enter an http\(s\) URL/).waitFor();
    await dialog.getByLabel('Endpoint URL').fill(`${receiver.url}/hooks`);
    await dialog.getByLabel('Description').fill('local receiver');
    await screenshot(page, 'webhook-create');
    await dialog.getByRole('button', { name: 'Add endpoint' }).click();
    const created = page.getByRole('dialog', { name: 'Endpoint added' });
    expect(((await created.getByTestId('secret').textContent()) ?? '').trim()).toMatch(/^whsec_/);
    await created.getByRole('button', { name: 'I have saved it' }).click();
    await page.getByText('No deliveries yet').waitFor();

    await page.getByRole('button', { name: 'Send test event' }).click();
    const delivery = page.getByTestId('deliveries').locator('tr[data-status="succeeded"]');
    await delivery.first().waitFor({ timeout: 20_000 });
    await delivery.getByText('webhook.test').waitFor();
    const id = await delivery.first().getAttribute('data-delivery-id');
    const got = receiver.received.find((r) => r.headers['webhook-id'] === id);
    expect(got?.path).toBe('/hooks');
    expect(JSON.parse(got!.body).type).toBe('webhook.test');
    await delivery.getByRole('button', { name: 'Details' }).click();
    const drawer = page.getByRole('dialog', { name: 'Message' });
    await drawer.getByTestId('attempts').locator('tr[data-attempt="1"]').getByText('200').waitFor();
    await screenshot(page, 'webhook-detail');
    await drawer.getByRole('button', { name: 'Close' }).click();

    await go(page, 'Webhooks');
    await page.getByRole('link', { name: `${receiver.url}/hooks` }).waitFor();
    await screenshot(page, 'webhooks');

    // The receiver answers 410 Gone: the endpoint is disabled; once it is fixed, the endpoint is enabled again.
    gonePaths.add('/hooks');
    await page.getByRole('link', { name: `${receiver.url}/hooks` }).click();
    await page.getByRole('button', { name: 'Send test event' }).click();
    const alert = page.getByText('This endpoint is disabled');
    // The page shows the endpoint as it was loaded: reload until the 410 has disabled it.
    await reloadUntilVisible(page, alert, 'the endpoint disabled after a 410');
    await page.getByText('the endpoint answered 410 Gone').waitFor();
    await screenshot(page, 'webhook-disabled');
    gonePaths.delete('/hooks');
    await page.getByRole('button', { name: 'Enable endpoint' }).click();
    await alert.waitFor({ state: 'detached' });
    await page.getByRole('button', { name: 'Send test event' }).click();
    await page.getByTestId('deliveries').locator('tr[data-status="succeeded"]').nth(1).waitFor({ timeout: 20_000 });
    expect(errors).toEqual([]);
  }, 90_000);

  it('connects a CSV file picked from disk: uploaded as it is (multipart, streamed), past the old 5 MB paste limit', async () => {
    const { page, errors } = await suite.signedIn('File People');
    await page.goto('/sources/new');
    await page.getByRole('radio', { name: /CSV file/ }).check();
    const ROWS = 600_000;
    const lines = ['region,units'];
    for (let i = 0; i < ROWS; i++) lines.push(`r${i % 7},${i}`);
    const csv = Buffer.from(lines.join('\n') + '\n');
    expect(csv.length).toBeGreaterThan(5_000_000);
    await page.getByLabel('Upload a CSV file').setInputFiles({ name: 'regions.csv', mimeType: 'text/csv', buffer: csv });
    await page
      .getByTestId('picked-file')
      .getByText(/regions\.csv \(\d+\.\d MB\)/)
      .waitFor();
    expect(await page.getByLabel('Name').inputValue()).toBe('regions');
    const uploaded = page.waitForResponse((r) => new URL(r.url()).pathname === '/v1/sources/upload');
    await page.getByRole('button', { name: 'Connect source' }).click();
    const res = await uploaded;
    expect(res.status()).toBe(201);
    expect(res.request().headers()['content-type']).toMatch(/^multipart\/form-data; boundary=/);
    await heading(page, /regions/).waitFor();
    await page.locator('[data-status="ready"]').first().waitFor({ timeout: 60_000 });
    await page
      .getByTestId('row-count')
      .getByText(/600,?000/)
      .waitFor();
    expect(errors).toEqual([]);
  }, 120_000);

  it('trains a model on a source and predicts with it', async () => {
    const { page, errors } = await suite.signedIn('Model Makers');
    const rows = Array.from({ length: 40 }, (_, i) => ({ units: i % 7, price: 2 + (i % 5), plan: ['free', 'pro', 'team'][i % 3], churned: i % 3 === 0 ? 'yes' : 'no' }));
    await connectRows(page, 'customers', rows);
    await go(page, 'Models');
    await page.getByRole('link', { name: '+ New model' }).click();
    await heading(page, 'New model').waitFor();
    await page.getByRole('button', { name: 'Train model' }).click();
    await page.getByText('Name the model').waitFor();
    await page.getByLabel('Name').fill('Churn');
    await page.getByLabel(/Target/).selectOption('churned');
    for (const f of ['units', 'price', 'plan']) await page.getByRole('checkbox', { name: new RegExp(f) }).check();
    await screenshot(page, 'model-train');
    await page.getByRole('button', { name: 'Train model' }).click();
    await heading(page, /Churn/).waitFor();
    await page.locator('[data-status="ready"]').first().waitFor({ timeout: 60_000 });
    await page.getByRole('region', { name: 'Confusion matrix' }).waitFor();
    await page.getByLabel('units').fill('3');
    await page.getByLabel('price').fill('4');
    await page.getByLabel('plan', { exact: true }).selectOption('pro');
    await page.getByRole('button', { name: 'Predict' }).click();
    expect(['yes', 'no']).toContain(((await page.getByTestId('prediction-value').textContent()) ?? '').trim());
    await screenshot(page, 'model-trained');
    expect(errors).toEqual([]);
  }, 90_000);

  it('works at phone width (390 px): menu, keys, sources and a chart', async () => {
    const { page, errors } = await suite.signedIn('Pocket Co', PHONE);
    await screenshot(page, 'phone-overview');
    const menu = page.locator('button[aria-controls="sidebar"]');
    await menu.click();
    expect(await menu.getAttribute('aria-expanded')).toBe('true');
    expect(await menu.getAttribute('aria-label')).toBe('Close menu');
    await screenshot(page, 'phone-menu');
    await nav(page, 'API Keys').click();
    await heading(page, 'API Keys').waitFor();
    await page.getByRole('button', { name: '+ Create API key' }).click();
    await page.getByRole('dialog').getByLabel('Name').fill('phone');
    await page.getByRole('dialog').getByRole('button', { name: 'Create key' }).click();
    await page.getByTestId('secret').waitFor();
    await screenshot(page, 'phone-api-key-secret');
    await page.getByRole('button', { name: 'I have saved it' }).click();
    await page.getByTestId('key-row').first().waitFor();
    await screenshot(page, 'phone-api-keys');
    // Nothing overflows the screen sideways.
    expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(PHONE.width);

    await page.getByRole('button', { name: 'Open menu' }).click();
    await nav(page, 'Sources').click();
    await page.getByRole('link', { name: '+ Connect source' }).first().click();
    await page.getByLabel('Name').fill('phone data');
    await page.getByRole('button', { name: 'Fill in an example' }).click();
    await page.getByRole('button', { name: 'Connect source' }).click();
    await page.locator('[data-status="ready"]').first().waitFor({ timeout: 30_000 });
    await page.getByRole('link', { name: 'Explore data' }).click();
    await page.getByRole('checkbox', { name: /country/ }).check();
    const bars = page.locator('svg[data-chart="bar"] rect.chart-bar');
    await runQuery(page, async () => (await bars.count()) > 0);
    expect(await bars.count()).toBe(3);
    await screenshot(page, 'phone-explore');
    expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(PHONE.width);
    await page.goto('/sources');
    await page.getByRole('table', { name: 'Sources' }).waitFor();
    await screenshot(page, 'phone-sources');
    expect(errors).toEqual([]);
  }, 90_000);
});
