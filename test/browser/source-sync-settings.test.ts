import pg from 'pg';
import type { Page } from 'playwright-core';
import { stackEnv, uniqueSuffix } from '@dap/testing';
import { browserSuite, screenshot, heading } from './system.ts';

/**
 * The source pages' sync controls in a real browser against the whole system and the test PostgreSQL: a
 * database source connected with a schedule, a schema policy and incremental settings; the next run shown; an
 * incremental re-sync that pulls only the rows past the cursor; a full re-sync; rows a quarantining sync set
 * aside, downloaded from the page's link; and settings edited in place. Each step keeps a screenshot.
 */
let pgc: pg.Client;
const { POSTGRES_URL } = stackEnv();
const table = `br_orders_${uniqueSuffix()}`;

const suite = browserSuite();

beforeAll(async () => {
  pgc = new pg.Client(POSTGRES_URL);
  await pgc.connect();
  await pgc.query(`CREATE TABLE ${table} (id bigint PRIMARY KEY, amount numeric(10,2), updated_at timestamptz)`);
  await pgc.query(`INSERT INTO ${table} VALUES (1, 10, '2025-01-01T10:00:00Z'), (2, 20, '2025-01-01T11:00:00Z'), (3, 30, '2025-01-01T11:00:00Z')`);
});

afterAll(async () => {
  await pgc?.query(`DROP TABLE IF EXISTS ${table}`).catch(() => undefined);
  await pgc?.end();
});

async function lastSyncSays(page: Page, text: RegExp): Promise<void> {
  await page.getByTestId('last-sync-report').filter({ hasText: text }).waitFor({ timeout: 30_000 });
  await page.locator('[data-status="ready"]').first().waitFor({ timeout: 30_000 });
}

it('connects an incremental, scheduled database source, re-syncs it incrementally and in full, downloads set-aside rows and edits its settings', async () => {
  const { page, errors } = await suite.signedIn('Sync Settings Ltd');

  await page.goto('/sources/new');
  await heading(page, 'Connect a source').waitFor();
  await page.getByRole('radio', { name: /PostgreSQL/ }).check();
  await page.getByLabel('Name').fill('orders db');
  await page.getByLabel('Connect with').selectOption('url');
  await page.getByLabel('Connection URL').fill(POSTGRES_URL);
  await page.getByRole('textbox', { name: 'Table' }).fill(table);
  await page.getByLabel('Sync by itself').selectOption('every');
  await page.getByLabel('Interval').fill('15m');
  await page.getByLabel('When the columns change').selectOption('quarantine');
  await page.getByLabel('Incremental cursor column (optional)').fill('updated_at');
  await page.getByLabel('Primary key (optional)').fill('id');
  await screenshot(page, 'source-connect-sync-settings', { fullPage: true });
  await page.getByRole('button', { name: 'Connect source' }).click();
  await heading(page, /orders db/).waitFor();

  await lastSyncSays(page, /full\s*3 rows pulled, 3 written/);
  await page.getByTestId('schedule').getByText('Every 15m').waitFor();
  // The next run the API plans, about 15 minutes away, is the one shown (in the browser's zone, to the minute).
  const id = new URL(page.url()).pathname.split('/').pop()!;
  const api = (await (await page.request.get(`/v1/sources/${id}`)).json()) as { nextSyncAt: string };
  expect(Date.parse(api.nextSyncAt) - Date.now()).toBeGreaterThan(13 * 60_000);
  expect(Date.parse(api.nextSyncAt) - Date.now()).toBeLessThan(16 * 60_000);
  const shown = new Intl.DateTimeFormat('en-GB', { day: 'numeric', month: 'short', year: 'numeric', hour: '2-digit', minute: '2-digit' }).format(new Date(api.nextSyncAt));
  expect(await page.getByTestId('next-sync').textContent()).toBe(shown);
  await page
    .getByTestId('incremental')
    .getByText(/by updated_at, merged on id/)
    .waitFor();
  await page.getByTestId('cursor').getByText('2025-01-01 11:00:00+00').waitFor();
  expect(await page.getByRole('button', { name: 'Full re-sync' }).count()).toBe(1);
  await screenshot(page, 'source-detail-incremental', { fullPage: true });

  // One row changed, one added: the re-sync pulls the rows at or past the cursor only.
  await pgc.query(`UPDATE ${table} SET amount = 25, updated_at = '2025-01-02T09:00:00Z' WHERE id = 2`);
  await pgc.query(`INSERT INTO ${table} VALUES (4, 40, '2025-01-02T10:00:00Z')`);
  await page.getByRole('button', { name: 'Re-sync', exact: true }).click();
  await lastSyncSays(page, /incremental\s*3 rows pulled, 3 written/);
  await page.getByTestId('row-count').getByText('4').waitFor();
  await page.getByTestId('cursor').getByText('2025-01-02 10:00:00+00').waitFor();
  await screenshot(page, 'source-detail-incremental-resync', { fullPage: true });

  await page.getByRole('button', { name: 'Full re-sync' }).click();
  await lastSyncSays(page, /full\s*4 rows pulled, 4 written/);

  // A new column under quarantine: the new row that fills it is set aside, and the page links to it.
  await pgc.query(`ALTER TABLE ${table} ADD COLUMN coupon text`);
  await pgc.query(`INSERT INTO ${table} VALUES (5, 50, '2025-01-03T10:00:00Z', 'SPRING')`);
  await page.getByRole('button', { name: 'Re-sync', exact: true }).click();
  const link = page.getByTestId('quarantine-link');
  await link.waitFor({ timeout: 30_000 });
  const csv = await page.request.get((await link.getAttribute('href'))!);
  expect(csv.status()).toBe(200);
  const lines = (await csv.text()).trim().split('\n');
  expect(lines[0]).toBe('id,amount,updated_at,coupon');
  expect(lines.slice(1)).toEqual([expect.stringMatching(/^5,50(\.0)?,2025-01-03 10:00:00,SPRING$/)]);
  await page.getByTestId('row-count').getByText('4').waitFor();
  // The cursor moves past every row read, the one set aside included (a full re-sync reads it again).
  await page.getByTestId('cursor').getByText('2025-01-03 10:00:00+00').waitFor();
  await screenshot(page, 'source-detail-quarantined', { fullPage: true });

  // Settings edited in place: a cron schedule in a time zone and the freeze policy; the incremental settings stay.
  await page.getByRole('button', { name: 'Edit' }).click();
  const form = page.getByRole('form', { name: 'Sync settings' });
  await form.getByLabel('Sync by itself').selectOption('cron');
  await form.getByLabel('Cron expression').fill('not a cron');
  await form.getByRole('button', { name: 'Save' }).click();
  await form.locator('.field-error').first().waitFor();
  expect(await form.getByLabel('Cron expression').getAttribute('aria-invalid')).toBe('true');
  await screenshot(page, 'source-settings-cron-refused', { fullPage: true });
  await form.getByLabel('Cron expression').fill('0 6 * * *');
  await form.getByLabel('Time zone').fill('Europe/Berlin');
  await form.getByLabel('When the columns change').selectOption('freeze');
  await form.getByRole('button', { name: 'Save' }).click();
  await page.getByTestId('schedule').getByText('Cron 0 6 * * * (Europe/Berlin)').waitFor();
  await page
    .getByTestId('schema-policy')
    .getByText(/^Freeze/)
    .waitFor();
  // The cursor was kept: the incremental settings were not sent again.
  await page.getByTestId('cursor').getByText('2025-01-03 10:00:00+00').waitFor();
  await screenshot(page, 'source-settings-saved', { fullPage: true });

  await page.goto('/sources');
  await page.getByRole('columnheader', { name: 'Next sync' }).waitFor();
  await page
    .locator('tr[data-source-id] td[data-label="Next sync"]')
    // 06:00 in Berlin is minutes, hours or a day away, by the time of day the test runs.
    .filter({ hasText: /^(in a few seconds|in \d+ (minutes?|hours?|days?)|tomorrow)$/ })
    .waitFor();
  await screenshot(page, 'sources-next-sync');
  // The one failed request is the refused cron expression.
  expect(errors).toEqual(['Failed to load resource: the server responded with a status of 400 (Bad Request)']);
}, 180_000);
