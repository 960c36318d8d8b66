import type { Page } from 'playwright-core';
import { waitFor } from '@dap/testing';
import { browserSuite, screenshot, heading } from './system.ts';

/**
 * Settings > Account's Change password form, and the /reset-password page of a link the operator CLI
 * prints, in a real browser against the whole system. Each step keeps a screenshot.
 */
const OLD = 'correct horse battery staple';
const NEW = 'staple battery horse correct';
const NEWEST = 'a third passphrase, long enough';

const suite = browserSuite();

/** Console errors but the refusals this test provokes on purpose (a wrong current password, a used link). */
const unexpected = (errors: string[]) => errors.filter((e) => !/status of (400|403)/.test(e));

async function login(page: Page, email: string, password: string): Promise<void> {
  await page.goto('/login');
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password', { exact: true }).fill(password);
  await page.getByRole('button', { name: 'Log in' }).click();
}

function resetLink(email: string): string {
  return (suite.system.cli(['reset-password-link', email, '--url', `${suite.url}/`]) as { link: string }).link;
}

describe('account settings', () => {
  it('changes the password from Settings > Account, signing out the other session only; a reset link sets a new one once', async () => {
    const email = `owner-${Date.now()}@example.com`;
    const { page, errors } = await suite.openPage();
    await page.goto('/signup');
    await page.getByLabel('Account name').fill('Passwords Ltd');
    await page.getByLabel('Work email').fill(email);
    await page.getByLabel('Password', { exact: true }).fill(OLD);
    await page.getByRole('button', { name: 'Create account' }).click();
    await heading(page, /Overview|Welcome/).waitFor();

    const other = await suite.openPage();
    await login(other.page, email, OLD);
    await other.page.getByRole('navigation', { name: 'Main' }).waitFor();

    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Account', exact: true }).click();
    await heading(page, 'Account').waitFor();
    const form = page.getByRole('form', { name: 'Change password' });
    await form.getByLabel('Current password').fill('not my password');
    await form.getByLabel('New password', { exact: true }).fill(NEW);
    await form.getByLabel('Repeat the new password').fill(NEW);
    await form.getByRole('button', { name: 'Change password' }).click();
    await form.getByText('is wrong').waitFor();
    expect(await form.getByLabel('Current password').getAttribute('aria-invalid')).toBe('true');
    await screenshot(page, 'account-change-password-wrong-current');

    await form.getByLabel('Current password').fill(OLD);
    await form.getByRole('button', { name: 'Change password' }).click();
    await page.getByText('Your password was changed').waitFor();
    expect(await form.getByLabel('Current password').inputValue()).toBe('');
    await screenshot(page, 'account-change-password-done');

    // The other session ends (the gateway caches a session for up to 5 s); this one stays.
    await waitFor(
      async () => {
        await other.page.reload();
        return (await other.page.getByRole('button', { name: 'Log in' }).count()) > 0;
      },
      { timeoutMs: 15_000, what: 'the other session signed out' },
    );
    await page.reload();
    await heading(page, 'Account').waitFor();

    // The operator's reset link: a new password once, then the link is spent.
    const link = resetLink(email);
    const reset = await suite.openPage();
    await reset.page.goto(link);
    await heading(reset.page, 'Set a new password').waitFor();
    await reset.page.getByLabel('New password', { exact: true }).fill(NEWEST);
    await reset.page.getByLabel('Repeat the new password').fill(NEWEST);
    await screenshot(reset.page, 'reset-password-page');
    await reset.page.getByRole('button', { name: 'Set new password' }).click();
    await reset.page.getByText('Your password was changed. Log in with the new one.').waitFor();
    await login(reset.page, email, NEWEST);
    await reset.page.getByRole('navigation', { name: 'Main' }).waitFor();

    const again = await suite.openPage();
    await again.page.goto(link);
    await again.page.getByLabel('New password', { exact: true }).fill('yet another long one');
    await again.page.getByLabel('Repeat the new password').fill('yet another long one');
    await again.page.getByRole('button', { name: 'Set new password' }).click();
    await again.page.getByText('This link no longer works').waitFor();
    await screenshot(again.page, 'reset-password-link-used');

    expect(unexpected(errors)).toEqual([]);
    expect(unexpected(reset.errors)).toEqual([]);
    expect(unexpected(again.errors)).toEqual([]);
  });
});
