import { newId } from '@dap/contracts';
import { waitFor } from '@dap/testing';
import { browserSuite, PHONE, postFromPage, screenshot, WIDE } from './system.ts';

/**
 * Settings > Plan & usage, calls by key and by operation, in a real browser against the whole system: two
 * keys' calls (one 404) through the gateway show up per key (by name and hint, never the secret) and per
 * operation, the dashboard's own calls as their own row; the window switch changes the answer's resolution.
 */

// Counts reach analytics after each flush; a short one keeps the wait short.
const suite = browserSuite({ USAGE_FLUSH_MS: '300' });

const rowOf = (cells: string[]) => cells.map((c) => c.replace(/\s+/g, ' ').trim());

it('shows calls per key and per operation with errors and 429s, the dashboard apart, over 1 h, 24 h and 30 d', async () => {
  // Sign up in the page, and create two keys with its session (cookie and CSRF token), as the dashboard does.
  const { page, errors } = await suite.signedIn('Usage Ltd', WIDE);
  const createKey = async (name: string) => {
    const r = await postFromPage<{ id: string; secret: string; hint: string }>(page, '/keys', { name });
    return { status: r.status, ...r.json };
  };
  const etl = await createKey('etl job');
  const reporting = await createKey('reporting');
  expect([etl.status, reporting.status]).toEqual([201, 201]);
  const call = async (path: string, secret: string) => (await fetch(`${suite.url}/v1${path}`, { headers: { authorization: `Bearer ${secret}` } })).status;
  const statuses = [
    await call('/analytics/reports', etl.secret),
    await call('/analytics/reports', etl.secret),
    await call(`/analytics/reports/${newId('rpt')}`, etl.secret),
    await call('/analytics/overview', reporting.secret),
  ];
  expect(statuses).toEqual([200, 200, 404, 200]);

  await page.goto('/settings/plan');
  await page.getByRole('heading', { level: 1, name: 'Plan & usage' }).waitFor();
  const byKey = page.getByTestId('usage-by-key');
  const keyRow = (name: string) => byKey.getByRole('row').filter({ has: page.getByRole('rowheader', { name: new RegExp(`^${name}`) }) });
  // The counts arrive within a flush or two; the page refreshes itself, and a reload is only a faster look.
  await waitFor(
    async () => {
      if ((await keyRow('etl job').count()) && (await keyRow('reporting').count())) return true;
      await page.reload();
      await page.getByTestId('usage-breakdown').waitFor();
      return false;
    },
    { timeoutMs: 60_000, what: 'the usage table with both keys' },
  );
  expect(await page.getByRole('button', { name: '24 hours' }).getAttribute('aria-pressed')).toBe('true');
  // Name, hint, requests, 4xx, 5xx, error rate, 429s.
  expect(rowOf(await keyRow('etl job').getByRole('cell').allTextContents())).toEqual(['3', '1', '0', '33.33%', '0']);
  expect(rowOf([(await keyRow('etl job').getByRole('rowheader').textContent()) ?? ''])).toEqual([`etl job ${etl.hint}`]);
  expect(rowOf(await keyRow('reporting').getByRole('cell').allTextContents())).toEqual(['1', '0', '0', '0%', '0']);
  await keyRow('Dashboard').waitFor(); // the page's own calls, apart from the keys
  const byOperation = page.getByTestId('usage-by-operation');
  const opRow = (op: string) => byOperation.getByRole('row').filter({ has: page.getByRole('rowheader', { name: op, exact: true }) });
  expect(rowOf(await opRow('getReport').getByRole('cell').allTextContents())).toEqual(['1', '1', '0', '100%', '0']);
  expect(Number(rowOf(await opRow('listReports').getByRole('cell').allTextContents())[0])).toBeGreaterThanOrEqual(2);
  expect(await page.getByTestId('usage-breakdown').locator('svg').count()).toBeGreaterThan(0);
  const text = (await page.getByTestId('usage-breakdown').textContent()) ?? '';
  for (const secret of [etl.secret, reporting.secret]) expect(text).not.toContain(secret);
  await screenshot(page, 'usage-by-key-24h-desktop');

  // The 1-hour window: per minute, same calls.
  await page.getByRole('button', { name: '1 hour' }).click();
  await page.getByTestId('usage-totals').getByText('the last hour, per minute').waitFor();
  expect(await page.getByRole('button', { name: '1 hour' }).getAttribute('aria-pressed')).toBe('true');
  expect(rowOf(await keyRow('etl job').getByRole('cell').allTextContents())).toEqual(['3', '1', '0', '33.33%', '0']);
  await screenshot(page, 'usage-by-key-1h-desktop');
  await page.getByRole('button', { name: '30 days' }).click();
  await page.getByTestId('usage-totals').getByText('the last 30 days, per day').waitFor();
  expect(rowOf(await keyRow('reporting').getByRole('cell').allTextContents())).toEqual(['1', '0', '0', '0%', '0']);

  // The phone layout: the tables scroll within their region, the page does not.
  await page.setViewportSize(PHONE);
  await page.getByRole('button', { name: '24 hours' }).click();
  await keyRow('etl job').waitFor();
  await screenshot(page, 'usage-by-key-24h-phone');
  expect(await page.evaluate('document.documentElement.scrollWidth <= window.innerWidth + 1')).toBe(true);
  expect(errors).toEqual([]);
}, 120_000);
