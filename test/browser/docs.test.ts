import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { repoRoot, stackEnv, uniqueSuffix } from '@dap/testing';
import { DEPLOYABLES, freePort, startServices, type DeployableName, type Supervised } from '../../deploy/local/supervisor.ts';
import { DESKTOP, launchBrowser, newContext, screenshot, watchErrors } from './system.ts';

/**
 * The API reference at /docs in a real browser (Debian's Chromium, headless), served by the gateway
 * process alone: the reference and its script come from the gateway, and nothing is fetched elsewhere.
 */
let services: Supervised;
let chromium: Awaited<ReturnType<typeof launchBrowser>>;
let browser: Browser;
let gw = '';

beforeAll(async () => {
  const root = repoRoot();
  const suffix = uniqueSuffix();
  const gateway = DEPLOYABLES.filter((d) => d.name === 'gateway');
  const ports = { gateway: await freePort() } as Record<DeployableName, number>;
  // The services are not needed for /docs; their URLs point at a port nothing listens on.
  const nowhere = `http://127.0.0.1:${await freePort()}`;
  [services, chromium] = await Promise.all([
    startServices({
      root,
      ports,
      deployables: gateway,
      repickBusyPorts: true,
      logDir: join(root, '.local', 'test', 'logs', `browser-docs-${suffix}`),
      mongoDbPrefix: `brd${suffix}_`,
      env: {
        ...stackEnv(),
        KAFKA_TOPIC_PREFIX: `brd${suffix}.`,
        INTERNAL_SECRET: randomBytes(32).toString('hex'),
        ACCOUNTS_URL: nowhere,
        SOURCES_URL: nowhere,
        ANALYTICS_URL: nowhere,
        MODELS_URL: nowhere,
        WEBHOOKS_URL: nowhere,
        LOG_LEVEL: 'info',
      },
    }),
    launchBrowser(),
  ]);
  browser = chromium.browser;
  gw = services.urls.gateway;
}, 120_000);

afterAll(async () => {
  await chromium?.close();
  await services?.stop();
}, 60_000);

/** Every request the page makes, and the CSP violations it reports. */
async function openDocs(): Promise<{ page: Page; requests: string[]; errors: string[] }> {
  const context = await newContext(browser, gw, DESKTOP);
  const page = await context.newPage();
  const requests: string[] = [];
  page.on('request', (r) => void requests.push(r.url()));
  const errors = watchErrors(page);
  await page.goto('/docs');
  return { page, requests, errors };
}

it('shows the reference from the gateway alone: POST /v1/sources field by field, the webhook catalog, no request elsewhere', async () => {
  const { page, requests, errors } = await openDocs();
  await page.getByRole('heading', { name: 'Data Analytics and Model Prediction API' }).first().waitFor();

  // The create-source operation: its request body, field by field, and its example.
  await page.goto('/docs#tag/sources/POST/sources');
  const op = page.locator('[id="api/tag/sources/POST/sources"]');
  await op.waitFor();
  for (const field of ['type', 'name', 'rows']) {
    const row = page.locator(`[id="api/tag/sources/POST/sources.body.${field}"]`);
    await row.waitFor();
    await row.getByText(field, { exact: true }).first().waitFor();
  }
  await op.getByText('"Orders 2026"').first().waitFor();
  await screenshot(page, 'docs-create-source');

  // The webhook event catalog: every event with its signature headers and payload, and the recipe.
  await page.goto('/docs#tag/webhook-events');
  for (const type of ['source.ready', 'report.completed', 'endpoint.disabled'])
    await page.locator(`[id="api/tag/webhook-events/webhook/POST/${type}"]`).waitFor({ state: 'attached' });
  const ready = page.locator('[id="api/tag/webhook-events/webhook/POST/source.ready"]');
  await ready.scrollIntoViewIfNeeded();
  await ready.getByText('webhook-signature', { exact: true }).first().waitFor();
  await page.locator('[id="api/tag/webhook-events/webhook/POST/source.ready.body.data"]').waitFor();
  await screenshot(page, 'docs-webhooks');
  await page.goto('/docs#description/webhooks');
  await page.getByText('verifyWebhook', { exact: false }).first().waitFor();

  const origin = new URL(gw).origin;
  const elsewhere = requests.filter((u) => !u.startsWith(`${origin}/`) && !u.startsWith('data:') && !u.startsWith('blob:'));
  expect(elsewhere).toEqual([]);
  // Positive control: the page did load its script and the document from the gateway (the recorder works).
  expect(requests).toEqual(expect.arrayContaining([`${origin}/docs/assets/scalar.js`, `${origin}/docs/assets/init.js`, `${origin}/v1/openapi.json`]));
  // Nothing was even attempted elsewhere: the CSP would have reported it (fonts, the proxy, telemetry).
  expect(errors).toEqual([]);
}, 90_000);

it('answers a problem type with its page', async () => {
  const context = await newContext(browser, gw, DESKTOP);
  const page = await context.newPage();
  const res = await page.goto('/docs/problems/quota-exceeded');
  expect(res?.status()).toBe(200);
  await page.getByRole('heading', { name: /Too Many Requests/ }).waitFor();
  await page.getByText('What to do').waitFor();
  const missing = await page.goto('/docs/problems/nope');
  expect(missing?.status()).toBe(404);
}, 60_000);
