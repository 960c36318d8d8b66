import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

/** The development account (made on first use) and a fresh API key for it, through the accounts CLI. */
export function ensureDevAccount(root: string, mongoUrl: string): { apiKey: string; accountId: string } {
  const out = execFileSync(process.execPath, ['--no-warnings', join(root, 'services/accounts/src/cli.ts'), 'ensure-dev'], {
    env: { PATH: process.env.PATH ?? '', MONGO_URL: mongoUrl, MONGO_DB: 'dap_accounts' },
    encoding: 'utf8',
  });
  return JSON.parse(out) as { apiKey: string; accountId: string };
}
