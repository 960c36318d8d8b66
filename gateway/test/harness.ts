import { randomBytes } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { CSRF_HEADER } from '@dap/contracts';
import { createLogger } from '@dap/logger';
import { http, stackEnv, TEST_INTERNAL_SECRET, testClock, uniqueSuffix } from '@dap/testing';
import { startAccounts } from '../../services/accounts/src/index.ts';
import { loadAccountsConfig } from '../../services/accounts/src/config.ts';
import { startGateway } from '../src/index.ts';
import { loadGatewayConfig } from '../src/config.ts';

export interface Seen {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/**
 * A real upstream that records what the gateway forwarded, standing in for the four data services (the
 * gateway's own behaviour is under test here; the services have their own tests and the e2e story).
 * `?delay=ms` makes it slow; it answers 201 to POSTs with a body echoing a counter.
 */
export async function startEchoUpstream() {
  const seen: Seen[] = [];
  let counter = 0;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      seen.push({ method: req.method!, url: req.url!, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      const params = new URL(req.url!, 'http://x').searchParams;
      const delay = Number(params.get('delay') ?? 0);
      // `?status=202&h-retry-after=5&h-set-cookie=a=1`: answer a POST with that status and those extra headers.
      const extra: [string, string][] = [...params].filter(([k]) => k.startsWith('h-')).map(([k, v]) => [k.slice(2), v]);
      const n = ++counter;
      setTimeout(() => {
        if (req.method === 'POST')
          res.writeHead(Number(params.get('status') ?? 201), [['content-type', 'application/json'], ['location', `/v1/things/${n}`], ...extra].flat()).end(JSON.stringify({ n }));
        else res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ data: [], hasMore: false, nextCursor: null }));
      }, delay);
    });
  });
  // Like the real services (libs/http listen): idle upstream connections outlive the gateway's reuse of them.
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

export const quietLogger = createLogger({ name: 'test', level: 'silent' });

/** Accounts (real) + an echo upstream + gateways built on demand, all on the test stack. */
export async function startHarness() {
  const suffix = uniqueSuffix();
  const stack = stackEnv();
  const common = { ...stack, KAFKA_TOPIC_PREFIX: `t${suffix}.`, INTERNAL_SECRET: TEST_INTERNAL_SECRET, HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'silent' };
  const upstream = await startEchoUpstream();
  // Accounts and every gateway share one clock, so a test can move past a key's expiry without waiting.
  const clock = testClock();
  const accounts = await startAccounts(loadAccountsConfig({ ...common, MONGO_DB: `acc_${suffix}` }), { logger: quietLogger, now: clock.now });
  const gateways: Awaited<ReturnType<typeof startGateway>>[] = [];
  const gatewayConfig = (overrides: Record<string, string> = {}) =>
    loadGatewayConfig({
      ...common,
      ACCOUNTS_URL: accounts.url,
      SOURCES_URL: upstream.url,
      ANALYTICS_URL: upstream.url,
      MODELS_URL: upstream.url,
      WEBHOOKS_URL: upstream.url,
      AUTH_FAILURES_PER_MINUTE: '100000',
      PUBLIC_REQUESTS_PER_MINUTE: '100000',
      METRICS_PORT: '0',
      ...overrides,
    });
  return {
    stack,
    suffix,
    upstream,
    accounts,
    clock,
    gatewayConfig,
    async gateway(overrides: Record<string, string> = {}) {
      const g = await startGateway(gatewayConfig(overrides), { logger: quietLogger, now: clock.now });
      gateways.push(g);
      return g;
    },
    async newAccount(plan: 'starter' | 'professional' | 'enterprise' = 'starter') {
      const account = await accounts.accounts.createAccount({ name: `acme-${plan}`, plan });
      const { secret, key } = await accounts.accounts.createKey(account._id, { name: 'all' });
      return { accountId: account._id, secret, keyId: key._id };
    },
    async stop() {
      for (const g of gateways) await g.stop();
      await accounts.stop();
      await upstream.close();
    },
  };
}

export const bearer = (secret: string) => ({ authorization: `Bearer ${secret}` });

/** The session cookie (`name=value`) that a sign-up or login answer sets. */
export const cookieFrom = (res: { headers: Headers }) => (res.headers.get('set-cookie') ?? '').split(';')[0]!;

/**
 * Signs a new owner and account up through a gateway, as the dashboard does (201 expected); `session` is the
 * cookie and CSRF header to call the dashboard's API with.
 */
export async function signUp(gatewayUrl: string, opts: { email?: string; password?: string; accountName?: string } = {}) {
  const email = opts.email ?? `owner-${randomBytes(6).toString('hex')}@example.com`;
  const res = await http('POST', `${gatewayUrl}/v1/auth/signup`, { body: { email, password: opts.password ?? 'correct horse battery', accountName: opts.accountName ?? 'Acme' } });
  expect(res.status).toBe(201);
  const cookie = cookieFrom(res);
  const csrf = res.body.csrfToken as string;
  return { email, cookie, csrf, session: { cookie, [CSRF_HEADER]: csrf }, accountId: res.body.account.id as string, res };
}
