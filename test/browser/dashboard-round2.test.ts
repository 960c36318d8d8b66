import { PUBLIC_EVENT_TYPES } from '@dap/contracts';
import { waitFor } from '@dap/testing';
import { browserSuite, connectRows, go, rollKey, runQuery, screenshot, watchErrors, PASSWORD, heading } from './system.ts';

/**
 * The dashboard's second round, in a real browser against the whole system: names instead of ids, field
 * errors that clear when fixed, a rolled key's state, Explore's query in the URL and its chart choices, the
 * query builder's own checks, and the webhook event catalog. Each step keeps a screenshot.
 */
const RAW_ID = /\b(?:src|mdl|rpt|whk)_[A-Za-z0-9]{6,}/;

const suite = browserSuite();

const bearer = (key: string) => ({ authorization: `Bearer ${key}`, 'content-type': 'application/json' });

describe('the dashboard, second round', () => {
  it('clears field errors as they are fixed, marks a rolled key and offers no second roll, and shows names instead of ids', async () => {
    const { page, errors } = await suite.openPage();
    await page.goto('/signup');
    await page.getByLabel('Account name').fill('Names Ltd');
    await page.getByLabel('Work email').fill('not-an-email');
    await page.getByLabel('Password', { exact: true }).fill('short');
    await page.getByRole('button', { name: 'Create account' }).click();
    const emailError = page.getByText('Enter a valid email address');
    const passwordError = page.getByText('Use at least 10 characters');
    await emailError.waitFor();
    await passwordError.waitFor();
    // Fixing the email clears its error at once; the password's stays while it is still too short…
    await page.getByLabel('Work email').fill(`names-${Date.now()}@example.com`);
    await emailError.waitFor({ state: 'detached' });
    expect(await page.getByLabel('Work email').getAttribute('aria-invalid')).toBeNull();
    await page.getByLabel('Password', { exact: true }).fill('still9chr');
    expect(await passwordError.count()).toBe(1);
    expect(await page.getByLabel('Password', { exact: true }).getAttribute('aria-invalid')).toBe('true');
    await screenshot(page, 'r2-signup-error-partly-fixed');
    // …and goes once it is long enough.
    await page.getByLabel('Password', { exact: true }).fill(PASSWORD);
    await passwordError.waitFor({ state: 'detached' });
    expect(await page.getByLabel('Password', { exact: true }).getAttribute('aria-invalid')).toBeNull();
    await page.getByRole('button', { name: 'Create account' }).click();
    await heading(page, 'Welcome, Names Ltd').waitFor();

    // A key, rolled with a grace period: the outgoing one says it is replaced and when it stops, and only
    // its replacement can be rolled.
    await go(page, 'API Keys');
    // Escape closes a dialog, and the focus goes back to the button that opened it.
    const opener = page.getByRole('button', { name: '+ Create API key' });
    await opener.click();
    const dialog = page.getByRole('dialog', { name: 'Create an API key' });
    await dialog.waitFor();
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'hidden' });
    expect(await page.evaluate('document.activeElement.textContent')).toBe('+ Create API key');
    await opener.click();
    await dialog.getByRole('button', { name: 'Create key' }).click();
    const nameError = dialog.getByText('Give the key a name you will recognise later');
    await nameError.waitFor();
    await dialog.getByLabel('Name').fill('deploy bot');
    await nameError.waitFor({ state: 'detached' });
    // While the key is being created, neither Escape nor Cancel drops the dialog: its answer is the secret, shown once.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    await page.route('**/v1/keys', async (route) => {
      if (route.request().method() === 'POST') await held;
      await route.continue();
    });
    await dialog.getByRole('button', { name: 'Create key' }).click();
    await dialog.locator('button[aria-busy="true"]').waitFor();
    expect(await dialog.getByRole('button', { name: 'Cancel' }).isDisabled()).toBe(true);
    await page.keyboard.press('Escape');
    release();
    const created = page.getByRole('dialog', { name: 'Key “deploy bot” created' });
    await created.waitFor();
    await page.unroute('**/v1/keys');
    // The secret's dialog ignores Escape too (the first Escape above is the control that closes a dialog).
    await page.keyboard.press('Escape');
    expect(await created.isVisible()).toBe(true);
    const secret = ((await created.getByTestId('secret').textContent()) ?? '').trim();
    await created.getByRole('button', { name: 'I have saved it' }).click();
    const newSecret = await rollKey(page, 'deploy bot', '3600');
    const outgoing = page.getByTestId('key-row').filter({ hasText: `dap_sk_…${secret.slice(-4)}` });
    const incoming = page.getByTestId('key-row').filter({ hasText: `dap_sk_…${newSecret.slice(-4)}` });
    await outgoing.getByText(/^Replaced, expires at \d{1,2} \w{3} \d{4}, \d{2}:\d{2}$/).waitFor();
    await outgoing.getByTestId('key-replaced').waitFor();
    expect(await outgoing.getByRole('button', { name: /^Roll key/ }).count()).toBe(0);
    expect(await outgoing.getByRole('button', { name: 'Revoke key deploy bot' }).count()).toBe(1);
    // Positive control: the new key offers its roll.
    expect(await incoming.getByRole('button', { name: 'Roll key deploy bot' }).count()).toBe(1);
    expect(await page.getByRole('button', { name: 'Roll key deploy bot' }).count()).toBe(1);
    // The outgoing secret still works during its grace period.
    expect((await fetch(`${suite.url}/v1/sources`, { headers: bearer(secret) })).status).toBe(200);
    await screenshot(page, 'r2-api-key-replaced');

    // A source and a model trained on it through the API: the dashboard shows their names, never ids or templates.
    let keyCalls = 1; // the check of the outgoing secret above
    const api = (path: string, init: RequestInit = {}) => {
      keyCalls++;
      return fetch(`${suite.url}${path}`, { ...init, headers: bearer(newSecret) });
    };
    const now = Date.now();
    const rows = Array.from({ length: 24 }, (_, i) => ({
      country: ['FR', 'DE', 'US'][i % 3],
      amount: 3 + 2 * i,
      units: i,
      at: new Date(now - (i % 4) * 86_400_000).toISOString(),
    }));
    const src = await api('/v1/sources', { method: 'POST', body: JSON.stringify({ type: 'inline', name: 'orders ledger', rows }) });
    expect(src.status).toBe(201);
    const sourceId = ((await src.json()) as { id: string }).id;
    await waitFor(async () => ((await (await api(`/v1/sources/${sourceId}`)).json()) as { status: string }).status === 'ready', {
      timeoutMs: 30_000,
      what: 'the source ready',
    });
    const model = await api('/v1/models', {
      method: 'POST',
      body: JSON.stringify({ type: 'linear_regression', name: 'Spend forecast', sourceId, target: 'amount', features: ['units'] }),
    });
    expect(model.status).toBe(202);
    const modelId = ((await model.json()) as { id: string }).id;
    await waitFor(async () => ((await (await api(`/v1/models/${modelId}`)).json()) as { status: string }).status === 'ready', {
      timeoutMs: 60_000,
      what: 'the model trained',
    });
    // What the API says holds the id and the template the dashboard must not show as they are.
    const described = ((await (await api(`/v1/models/${modelId}`)).json()) as { description: string }).description;
    expect(described).toContain(sourceId);
    expect(described).toContain('{prediction}');

    await go(page, 'Models');
    const card = page.locator('.model-card').filter({ hasText: 'Spend forecast' });
    await card.getByRole('link', { name: 'orders ledger' }).waitFor();
    const cardText = (await card.locator('.model-desc').textContent()) ?? '';
    expect(cardText).toMatch(/from 1 feature\(s\) of source orders ledger\. Each prediction has prediction \(a number\)\./);
    expect(cardText).not.toMatch(RAW_ID);
    expect(cardText).not.toContain('{');
    await screenshot(page, 'r2-models-names');
    await card.getByRole('link', { name: 'Spend forecast' }).click();
    await heading(page, /Spend forecast/).waitFor();
    await page.locator('.kv').getByRole('link', { name: 'orders ledger' }).waitFor();
    const header = (await page.locator('.page-description').textContent()) ?? '';
    expect(header).toContain('orders ledger');
    expect(header).not.toMatch(RAW_ID);
    expect(header).not.toContain('{');
    await screenshot(page, 'r2-model-detail-names');

    await go(page, 'Overview', /Welcome/);
    const activity = page.locator('ul.activity');
    await activity.getByRole('link', { name: 'Spend forecast' }).first().waitFor();
    await activity.getByRole('link', { name: 'orders ledger' }).first().waitFor();
    expect((await activity.textContent()) ?? '').not.toMatch(RAW_ID);
    // Positive control: the feed does hold those ids, as links to their pages.
    expect(await activity.locator(`a[href="/sources/${sourceId}"]`).count()).toBeGreaterThan(0);
    // The plan's window counts the key's requests only: the dashboard's own calls (dozens by now) are not in it.
    const usageNow = page.getByTestId('usage-now');
    await usageNow.getByText("the dashboard's own requests are not counted").waitFor();
    const used = Number(((await usageNow.locator('.big-number').textContent()) ?? '').replace(/\D/g, ''));
    expect(used).toBeGreaterThan(0);
    expect(used).toBeLessThanOrEqual(keyCalls);
    await screenshot(page, 'r2-overview-activity-names');
    expect(errors).toEqual([]);
  }, 150_000);

  it('keeps the Explore query in the URL, charts it as chosen, flags a filter without a value, and names new measures', async () => {
    const { page, errors, context } = await suite.signedIn('Explorers');
    // Today's row makes the last day a period still in progress.
    const now = Date.now();
    const rows = Array.from({ length: 12 }, (_, i) => ({
      country: ['FR', 'DE', 'US'][i % 3],
      amount: 1 + i,
      units: 2 * i,
      at: new Date(now - (i % 4) * 86_400_000).toISOString(),
    }));
    await connectRows(page, 'sales', rows);
    await page.getByRole('link', { name: 'Explore data' }).click();
    await heading(page, 'Explore').waitFor();

    // Each added measure has a name of its own.
    await page.getByRole('button', { name: '+ Add measure' }).click();
    await page.getByRole('button', { name: '+ Add measure' }).click();
    await page.getByRole('button', { name: '+ Add measure' }).click();
    const names = await Promise.all([2, 3, 4].map((n) => page.getByLabel(`Measure ${n} name (optional)`).getAttribute('placeholder')));
    expect(names).toEqual(['sum_amount', 'sum_units', 'sum_amount_2']);
    expect(new Set(await page.getByLabel('Sort by').locator('option').allTextContents()).size).toBe(5); // default + 4 distinct
    await page.getByRole('button', { name: 'Remove measure 4' }).click();

    // A filter without a value is flagged before anything is sent.
    const queries: string[] = [];
    page.on('request', (r) => {
      if (new URL(r.url()).pathname === '/v1/analytics/query') queries.push(r.postData() ?? '');
    });
    await page.getByRole('button', { name: '+ Add filter' }).click();
    await page.getByLabel('Filter 1 field').selectOption('country');
    await page.getByRole('button', { name: 'Run query' }).click();
    const filterError = page.locator('p.builder-error', { hasText: 'Enter a value to compare with' });
    await filterError.waitFor();
    expect(await page.getByLabel('Filter 1 value').getAttribute('aria-invalid')).toBe('true');
    expect(queries).toEqual([]);
    await screenshot(page, 'r2-explore-filter-without-value');
    await page.getByLabel('Filter 1 value').fill('FR, DE, US');
    await page.getByLabel('Filter 1 operator').selectOption('in');
    await filterError.waitFor({ state: 'detached' });

    // A grouped query: it runs, and the URL now holds it.
    await page.getByRole('checkbox', { name: /country/ }).check();
    const bars = page.locator('svg[data-chart="bar"] rect.chart-bar');
    await runQuery(page, async () => (await bars.count()) === 3);
    expect(queries.length).toBeGreaterThan(0);
    const groupedUrl = page.url();
    const q = JSON.parse(new URL(groupedUrl).searchParams.get('q')!) as { dimensions: string[]; filters: unknown[]; measures: unknown[] };
    expect(q).toMatchObject({ dimensions: ['country'], filters: [{ field: 'country', op: 'in', value: 'FR, DE, US' }] });
    expect(q.measures).toHaveLength(3);
    // The bar's tooltip names its series.
    expect(await bars.first().locator('title').textContent()).toMatch(/^\w+ · count: \d+$/);
    await screenshot(page, 'r2-explore-grouped');

    // Over time, by day: a line whose last day (today) is marked partial.
    await page.getByRole('checkbox', { name: /country/ }).uncheck();
    await page.getByLabel('Time field').selectOption('at');
    await page.getByLabel('Time granularity').selectOption('day');
    const points = page.locator('svg[data-chart="line"] circle.chart-point');
    await runQuery(page, async () => (await points.count()) === 4);
    expect(page.url()).not.toBe(groupedUrl);
    const timeUrl = page.url();
    const partialPoints = page.locator('svg[data-chart="line"] circle.chart-point[data-partial="true"]');
    expect(await partialPoints.count()).toBe(1);
    expect(await points.last().getAttribute('data-partial')).toBe('true');
    await page.getByTestId('partial-note').getByText('The last period is still in progress').waitFor();
    expect(await page.locator('svg[data-chart="line"] path.chart-line-partial').count()).toBe(1);
    expect(await points.first().locator('title').textContent()).toMatch(/ · count: \d+$/);
    // Hovering names the series in the tooltip.
    const hit = page.locator('svg[data-chart="line"] rect.chart-hit');
    const box = (await hit.boundingBox())!;
    await page.mouse.move(box.x + box.width - 2, box.y + box.height / 2);
    expect(await page.locator('svg[data-chart="line"] .chart-hover text').textContent()).toMatch(/\(partial\) · count: \d+$/);
    await screenshot(page, 'r2-explore-line-partial');

    // The chart type is a choice, kept in the URL.
    await page.getByLabel('Chart type').selectOption('area');
    await page.locator('svg[data-chart="line"] path.chart-area').first().waitFor();
    expect(new URL(page.url()).searchParams.get('chart')).toBe('area');
    await screenshot(page, 'r2-explore-area');
    await page.getByLabel('Chart type').selectOption('bar');
    await page.locator('svg[data-chart="bar"] rect.chart-bar[data-partial="true"]').waitFor();
    expect(await page.locator('svg[data-chart="bar"] rect.chart-bar').count()).toBe(4);
    await screenshot(page, 'r2-explore-bar-partial');
    await page.getByLabel('Chart type').selectOption('number');
    await page
      .getByTestId('big-numbers')
      .getByText(/\(partial\)/)
      .waitFor();
    expect(await page.locator('svg[data-chart]').count()).toBe(0);
    await screenshot(page, 'r2-explore-number');
    await page.getByLabel('Chart type').selectOption('table');
    await page.getByTestId('result-table').waitFor();
    expect(await page.locator('svg[data-chart]').count()).toBe(0);
    await screenshot(page, 'r2-explore-table');
    const tableUrl = page.url();
    expect(new URL(tableUrl).searchParams.get('chart')).toBe('table');

    // Back returns to the grouped query: the builder and the chart come back.
    await page.goBack();
    await page.waitForURL((u) => u.href === groupedUrl);
    await bars.nth(2).waitFor();
    expect(await bars.count()).toBe(3);
    expect(await page.getByRole('checkbox', { name: /country/ }).isChecked()).toBe(true);
    expect(await page.getByLabel('Time field').inputValue()).toBe('');
    await screenshot(page, 'r2-explore-back');
    // Forward again, to the time series as a table.
    await page.goForward();
    await page.waitForURL((u) => u.href === tableUrl);
    await page.getByTestId('result-table').locator('tbody tr').nth(3).waitFor();
    expect(await page.getByLabel('Time field').inputValue()).toBe('at');

    // A shared link opens the same query, chart type included, in another tab.
    const shared = await context.newPage();
    const sharedErrors = watchErrors(shared);
    await shared.goto(timeUrl);
    await shared.locator('svg[data-chart="line"] circle.chart-point').nth(3).waitFor({ timeout: 20_000 });
    expect(await shared.getByLabel('Time granularity').inputValue()).toBe('day');
    expect(await shared.getByLabel('Filter 1 value').inputValue()).toBe('FR, DE, US');
    await screenshot(shared, 'r2-explore-shared-link');
    await shared.close();
    expect(sharedErrors).toEqual([]);
    expect(errors).toEqual([]);
  }, 150_000);

  it('lists every webhook event type with what it means and a sample payload, from the API reference catalog', async () => {
    const { page, errors } = await suite.signedIn('Catalog Readers');
    await go(page, 'Webhooks');
    await page.getByRole('link', { name: 'Event catalog' }).click();
    await heading(page, 'Event catalog').waitFor();
    const items = page.getByTestId('event-type');
    await items.first().waitFor();
    const doc = (await (await fetch(`${suite.url}/v1/openapi.json`)).json()) as {
      webhooks: Record<string, { post: { description: string; requestBody: { content: { 'application/json': { example: unknown } } } } }>;
    };
    const shown = await items.evaluateAll((els) => els.map((e) => e.getAttribute('data-event-type')));
    expect([...shown].sort()).toEqual([...PUBLIC_EVENT_TYPES].sort());
    for (const type of PUBLIC_EVENT_TYPES) {
      const item = page.locator(`[data-event-type="${type}"]`);
      const meaning = ((await item.locator('.event-meaning').textContent()) ?? '').trim();
      expect(meaning.length).toBeGreaterThan(15);
      expect(doc.webhooks[type]!.post.description.replace(/`/g, '')).toContain(meaning);
      const sample = JSON.parse((await item.locator('pre code').textContent()) ?? '') as { type: string };
      expect(sample).toEqual(doc.webhooks[type]!.post.requestBody.content['application/json'].example);
      expect(sample.type).toBe(type);
    }
    await screenshot(page, 'r2-event-catalog');
    expect(errors).toEqual([]);
  }, 90_000);
});
