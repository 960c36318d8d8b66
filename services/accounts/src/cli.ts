import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs, parseEnv } from 'node:util';
import { planSchema, scopeSchema, SCOPES } from '@dap/contracts';
import { loadConfig, mongoConfig } from '@dap/config';
import { z } from 'zod';
import { openAccountsDomain } from './index.ts';

/**
 * Operator CLI: accounts and keys without the dashboard. It writes to the accounts database; the running
 * accounts service relays the events it records (so a revocation still reaches every gateway).
 *
 *   npm run cli -- create-account --name Acme --plan starter [--email ops@acme.test]
 *   npm run cli -- create-key --account acct_… --name ci [--scopes sources:read,models:read] [--expires 2027-01-01T00:00:00Z]
 *   npm run cli -- revoke-key --account acct_… --key key_…
 *   npm run cli -- set-plan --account acct_… --plan professional
 *   npm run cli -- ensure-dev --email dev@localhost   (reuses the dev account, always makes a fresh key)
 *   npm run cli -- check-key           (reads the key from the DAP_API_KEY environment variable; exits 1 if it is not valid)
 *   npm run cli -- reset-password-link ada@example.com [--url https://dash.example.com/]
 *       prints a one-time link (valid 1 h) to the dashboard's /reset-password page, for a user who lost their
 *       password (there is no mail server: hand the link over yourself). The dashboard's address comes from
 *       --url, else DASHBOARD_URL, else http://127.0.0.1:8080/ (`npm start`'s).
 *
 * Without MONGO_URL in the environment it uses the local stack's MongoDB, from `.local/<stack>/stack.env`
 * (`--stack dev` by default, as `npm start` runs it; `--stack test` for the test stack).
 */
const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: {
    name: { type: 'string' },
    plan: { type: 'string' },
    email: { type: 'string' },
    account: { type: 'string' },
    key: { type: 'string' },
    scopes: { type: 'string' },
    expires: { type: 'string' },
    stack: { type: 'string', default: 'dev' },
    url: { type: 'string' },
  },
});

/** The environment, with the local stack's addresses under it when MONGO_URL is not set. */
function environment(): Record<string, string | undefined> {
  if (process.env.MONGO_URL) return process.env;
  const stack = values.stack ?? 'dev';
  if (!/^[a-z0-9-]+$/.test(stack)) throw new Error(`--stack must name a local stack profile (dev, test), got ${JSON.stringify(stack)}`);
  const file = fileURLToPath(new URL(`../../../.local/${stack}/stack.env`, import.meta.url));
  if (!existsSync(file)) {
    process.stderr.write(`error: MONGO_URL is not set and the ${stack} stack has no ${file} (start it with \`npm start\`, or set MONGO_URL)\n`);
    process.exit(2);
  }
  return { ...parseEnv(readFileSync(file, 'utf8')), ...process.env };
}

const config = loadConfig(
  {
    ...mongoConfig,
    MONGO_DB: z.string().default('dap_accounts'),
    DAP_API_KEY: z.string().optional(),
    DASHBOARD_URL: z.url({ protocol: /^https?$/ }).default('http://127.0.0.1:8080/'),
  },
  environment(),
);
const domain = await openAccountsDomain(config);
const out = (v: unknown) => process.stdout.write(`${JSON.stringify(v, null, 2)}\n`);
const need = (v: string | undefined, flag: string): string => {
  if (!v) throw new Error(`--${flag} is required`);
  return v;
};
const scopes = () => (values.scopes ? values.scopes.split(',').map((s) => scopeSchema.parse(s.trim())) : [...SCOPES]);

try {
  switch (positionals[0]) {
    case 'create-account': {
      const account = await domain.accounts.createAccount({ name: need(values.name, 'name'), plan: planSchema.parse(values.plan ?? 'starter'), email: values.email ?? null });
      const { secret, key } = await domain.accounts.createKey(account._id, { name: 'default', scopes: scopes() });
      out({ accountId: account._id, plan: account.plan, keyId: key._id, apiKey: secret });
      break;
    }
    case 'create-key': {
      const { secret, key } = await domain.accounts.createKey(need(values.account, 'account'), {
        name: values.name ?? 'cli',
        scopes: scopes(),
        expiresAt: values.expires ? new Date(values.expires) : null,
      });
      out({ keyId: key._id, scopes: key.scopes, expiresAt: key.expiresAt, apiKey: secret });
      break;
    }
    case 'revoke-key': {
      const key = await domain.accounts.revokeKey(need(values.account, 'account'), need(values.key, 'key'));
      out({ keyId: key._id, revokedAt: key.revokedAt });
      break;
    }
    case 'set-plan': {
      const account = await domain.accounts.changePlan(need(values.account, 'account'), planSchema.parse(values.plan));
      out({ accountId: account._id, plan: account.plan });
      break;
    }
    case 'ensure-dev': {
      const email = values.email ?? 'dev@localhost';
      const account = (await domain.accounts.findAccountByEmail(email)) ?? (await domain.accounts.createAccount({ name: 'Development', plan: 'starter', email }));
      const { secret, key } = await domain.accounts.createKey(account._id, { name: `dev ${new Date().toISOString()}` });
      out({ accountId: account._id, plan: account.plan, keyId: key._id, apiKey: secret });
      break;
    }
    case 'check-key': {
      const outcome = await domain.accounts.verifySecret(config.DAP_API_KEY ?? '');
      out(outcome.ok ? { ok: true, accountId: outcome.key.accountId } : outcome);
      process.exitCode = outcome.ok ? 0 : 1;
      break;
    }
    case 'reset-password-link': {
      const email = positionals[1];
      if (!email) throw new Error('usage: reset-password-link <email> [--url <dashboard URL>]');
      // Checked before anything is written, so a bad --url leaves no live token behind.
      const link = new URL(
        'reset-password',
        z
          .url({ protocol: /^https?$/, error: '--url must be an http(s) URL' })
          .parse(values.url ?? config.DASHBOARD_URL)
          .replace(/\/?$/, '/'),
      );
      const { token, expiresAt, userId } = await domain.identity.issueResetToken(email);
      link.searchParams.set('token', token);
      out({ userId, email: email.trim().toLowerCase(), link: link.href, expiresAt: expiresAt.toISOString() });
      break;
    }
    default:
      throw new Error(`unknown command ${positionals[0] ?? '(none)'}; see the header of services/accounts/src/cli.ts`);
  }
} catch (err) {
  const message = err instanceof z.ZodError ? err.issues.map((i) => i.message).join('; ') : (err as Error).message;
  process.stderr.write(`error: ${message}\n`);
  process.exitCode = 2;
} finally {
  await domain.mongo.close();
}
