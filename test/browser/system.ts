import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type BrowserContextOptions, type Locator, type Page } from 'playwright-core';
import { repoRoot, startReceiver, waitFor } from '@dap/testing';
import { startSystem, type System } from '../system.ts';

export const CHROMIUM = '/usr/bin/chromium';
export const SCREENSHOT_DIR = join(repoRoot(), 'test-artifacts', 'screenshots');

/** The whole system (test/system.ts), the gateway serving the built dashboard from gateway/dashboard/dist (bootstrap builds it). */
export async function startDashboardSystem(extraEnv: Record<string, string> = {}): Promise<System> {
  const root = repoRoot();
  if (!existsSync(join(root, 'gateway', 'dashboard', 'dist', 'index.html'))) {
    throw new Error('the dashboard is not built: run `bash deploy/local/bootstrap.sh` (npm test does)');
  }
  return startSystem({ name: 'br', env: { DASHBOARD_DIR: join(root, 'gateway', 'dashboard', 'dist'), LOG_LEVEL: 'info', ...extraEnv } });
}

/**
 * Debian's Chromium, headless. `launch` gives every run a fresh temporary user-data dir (profile) of its
 * own and removes it on close, so no state leaks between runs.
 */
export async function launchBrowser(): Promise<{ browser: Browser; close: () => Promise<void> }> {
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic'],
  });
  return {
    browser,
    close: async () => {
      await browser.close();
    },
  };
}

export const DESKTOP = { width: 1366, height: 900 };
export const WIDE = { width: 1440, height: 900 };
export const PHONE = { width: 390, height: 844 };

/** `options` adds to the usual ones (a storage state to carry a session over, say). */
export async function newContext(browser: Browser, baseURL: string, viewport = DESKTOP, options: BrowserContextOptions = {}): Promise<BrowserContext> {
  const context = await browser.newContext({
    baseURL,
    viewport,
    deviceScaleFactor: 1,
    colorScheme: 'light',
    reducedMotion: 'reduce',
    locale: 'en-GB',
    timezoneId: 'UTC',
    ...options,
  });
  context.setDefaultTimeout(15_000);
  return context;
}

/** Records console errors and CSP violations, which a test asserts are absent. */
export function watchErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error' && !/Failed to load resource: the server responded with a status of (401|404)/.test(m.text())) errors.push(m.text());
  });
  page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
  return errors;
}

/** A full-page PNG in test-artifacts/screenshots, without transient notifications. */
/** `fullPage: false` for pages too long to capture whole on a busy machine (the API reference). */
export async function screenshot(page: Page, name: string, opts: { fullPage?: boolean } = {}): Promise<void> {
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  // Always the first: a dismissed toast leaves the list, so the locators `all()` gave would point past its end
  // and wait out the action timeout. A toast that goes by itself meanwhile is not an error.
  const close = page.getByRole('button', { name: 'Dismiss notification' });
  for (let left = await close.count(); left > 0; left--)
    await close
      .first()
      .click({ timeout: 2_000 })
      .catch(() => undefined);
  await page.evaluate('window.scrollTo(0, 0)');
  await page.screenshot({ path: join(SCREENSHOT_DIR, `${name}.png`), fullPage: opts.fullPage ?? true, animations: 'disabled' });
}

/** The password the browser tests sign up with. */
export const PASSWORD = 'correct horse battery staple';

/** A link of the main navigation, by its exact name. */
export const nav = (page: Page, name: string) => page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name, exact: true });

/** The page's title heading. */
export const heading = (page: Page, name: string | RegExp) => page.getByRole('heading', { level: 1, name });

/** Signs up a new account through the sign-up page, waits for its welcome, and answers the email it used. */
export async function signUp(page: Page, accountName: string): Promise<string> {
  const email = `${accountName.toLowerCase().replace(/\W+/g, '-')}-${Date.now()}@example.com`;
  await page.goto('/signup');
  await page.getByLabel('Account name').fill(accountName);
  await page.getByLabel('Work email').fill(email);
  await page.getByLabel('Password', { exact: true }).fill(PASSWORD);
  await page.getByRole('button', { name: 'Create account' }).click();
  await heading(page, `Welcome, ${accountName}`).waitFor();
  return email;
}

/** The whole system and a browser for one test file; `url` is the gateway's. */
export interface BrowserSuite {
  readonly url: string;
  readonly system: System;
  readonly browser: Browser;
  /** A page in a browser context of its own (its own cookies), closed after the file, and the page's errors. */
  openPage(viewport?: { width: number; height: number }, options?: BrowserContextOptions): Promise<{ page: Page; errors: string[]; context: BrowserContext }>;
  /** openPage, then a new account signed up as `accountName` (see signUp), with the email it used. */
  signedIn(accountName: string, viewport?: { width: number; height: number }): Promise<{ page: Page; errors: string[]; context: BrowserContext; email: string }>;
}

/** Starts the system (with `extraEnv`) and a browser before the file's tests, and stops both after them. */
export function browserSuite(extraEnv: Record<string, string> = {}): BrowserSuite {
  let system: System;
  let chromium: Awaited<ReturnType<typeof launchBrowser>>;
  const contexts: BrowserContext[] = [];
  beforeAll(async () => {
    [system, chromium] = await Promise.all([startDashboardSystem(extraEnv), launchBrowser()]);
  }, 120_000);
  afterAll(async () => {
    for (const c of contexts) await c.close().catch(() => undefined);
    await chromium?.close();
    await system?.stop();
  }, 60_000);
  return {
    get url() {
      return system.gw;
    },
    get system() {
      return system;
    },
    get browser() {
      return chromium.browser;
    },
    async openPage(viewport = DESKTOP, options = {}) {
      const context = await newContext(chromium.browser, system.gw, viewport, options);
      contexts.push(context);
      const page = await context.newPage();
      return { page, errors: watchErrors(page), context };
    },
    async signedIn(accountName, viewport = DESKTOP) {
      const opened = await this.openPage(viewport);
      return { ...opened, email: await signUp(opened.page, accountName) };
    },
  };
}

/** A webhook receiver (startReceiver, answering as `respond` says) started before the file's tests and closed after them. */
export function receiverSuite(respond?: Parameters<typeof startReceiver>[0]): { readonly url: string; readonly received: Awaited<ReturnType<typeof startReceiver>>['received'] } {
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  beforeAll(async () => {
    receiver = await startReceiver(respond);
  });
  afterAll(() => receiver?.close());
  return {
    get url() {
      return receiver.url;
    },
    get received() {
      return receiver.received;
    },
  };
}

/**
 * Rolls the key `name` on the API Keys page through its dialog, the old secret working for `grace` (an option's
 * value, in seconds), and answers the new secret, shown once (its dialog is closed after).
 */
export async function rollKey(page: Page, name: string, grace: string): Promise<string> {
  await page.getByRole('button', { name: `Roll key ${name}` }).click();
  const roll = page.getByRole('dialog', { name: `Roll “${name}”` });
  await roll.getByLabel('Old secret stops working').selectOption(grace);
  await roll.getByRole('button', { name: 'Roll key' }).click();
  const rolled = page.getByRole('dialog', { name: `Key “${name}” rolled` });
  const secret = ((await rolled.getByTestId('secret').textContent()) ?? '').trim();
  await rolled.getByRole('button', { name: 'I have saved it' }).click();
  return secret;
}

/** A POST to the API from inside the page, with its session (cookie and CSRF token) as the dashboard sends it. */
export async function postFromPage<T>(page: Page, path: string, body: unknown): Promise<{ status: number; json: T }> {
  return (await page.evaluate(
    async ({ path, body }) => {
      const session = (await (await fetch('/v1/auth/session')).json()) as { csrfToken: string };
      const r = await fetch(`/v1${path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-csrf-token': session.csrfToken }, body: JSON.stringify(body) });
      return { status: r.status, json: (await r.json()) as unknown };
    },
    { path, body },
  )) as { status: number; json: T };
}

/** Follows a link of the main navigation and waits for its page's heading. */
export async function go(page: Page, link: string, title: string | RegExp = link): Promise<void> {
  await nav(page, link).click();
  await heading(page, title).waitFor();
}

/** Runs the query, clicking Run again while the analytics projection has not caught up with the source. */
export async function runQuery(page: Page, ready: () => Promise<boolean>): Promise<void> {
  await page.getByRole('button', { name: 'Run query' }).click();
  await waitFor(
    async () => {
      if (await ready()) return true;
      if (await page.getByRole('alert').count()) await page.getByRole('button', { name: 'Run query' }).click();
      await page.waitForTimeout(400);
      return false;
    },
    { timeoutMs: 20_000, what: 'the query result' },
  );
}

/** Reloads the page until `target` shows (a page shows what it loaded; the change it waits for is server-side). */
export async function reloadUntilVisible(page: Page, target: Locator, what: string): Promise<void> {
  await waitFor(
    async () => {
      await page.reload();
      return target.waitFor({ timeout: 2_000 }).then(
        () => true,
        () => false,
      );
    },
    { what, timeoutMs: 30_000 },
  );
}

/** Connects an inline source of `rows` through the Connect a source page and waits until it is ready. */
export async function connectRows(page: Page, name: string, rows: readonly object[]): Promise<void> {
  await page.goto('/sources/new');
  await page.getByLabel('Name').fill(name);
  await page.getByLabel('Rows (JSON array of objects)').fill(JSON.stringify(rows));
  await page.getByRole('button', { name: 'Connect source' }).click();
  await page.locator('[data-status="ready"]').first().waitFor({ timeout: 30_000 });
}
