import { request } from 'node:http';
import { networkInterfaces } from 'node:os';
import { randomInt } from 'node:crypto';
import { bearer, startHarness } from './harness.ts';

/**
 * The per-address limits (failed authentications, unauthenticated calls) against the real client address:
 * the socket's, or the one the proxies TRUST_PROXY names put in X-Forwarded-For. Clients are told apart by
 * their source address (any 127.x.y.z on Linux) or, behind a trusted proxy, by X-Forwarded-For, each one
 * random so that runs sharing the test stack's Redis never count against each other.
 */
let h: Awaited<ReturnType<typeof startHarness>>;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h?.stop());

const LIMIT = 5;
const BAD_KEY = 'dap_sk_000000000000000000000000000000000000';
const loopbackAddress = () => `127.${randomInt(1, 255)}.${randomInt(0, 256)}.${randomInt(1, 255)}`;
const documentationAddress = () => `198.51.100.${randomInt(1, 255)}`; // TEST-NET-2: never a real client
const ipv6Block = () => `2001:db8:${randomInt(0, 0xffff).toString(16)}:${randomInt(0, 0xffff).toString(16)}`;

/** One request from `from` (a local source address) to the gateway at `url`. */
function call(url: string, opts: { from: string; path?: string; method?: string; headers?: Record<string, string>; body?: unknown }): Promise<number> {
  const body = opts.body === undefined ? undefined : JSON.stringify(opts.body);
  return new Promise((resolve, reject) => {
    const req = request(
      `${url}${opts.path ?? '/v1/sources'}`,
      { method: opts.method ?? 'GET', localAddress: opts.from, headers: { ...(body ? { 'content-type': 'application/json' } : {}), ...opts.headers } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode!));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

describe('without TRUST_PROXY (clients connect directly)', () => {
  let gw: string;
  beforeAll(async () => {
    gw = (await h.gateway({ AUTH_FAILURES_PER_MINUTE: String(LIMIT) })).url;
  });

  it('ignores X-Forwarded-For: rotating it does not escape the failed-authentication limit', async () => {
    const client = loopbackAddress();
    const statuses: number[] = [];
    for (let i = 0; i <= LIMIT; i++) statuses.push(await call(gw, { from: client, headers: { ...bearer(BAD_KEY), 'x-forwarded-for': documentationAddress() } }));
    expect(statuses).toEqual([...Array<number>(LIMIT).fill(401), 429]);
    // Another client is not locked out by this one.
    expect(await call(gw, { from: loopbackAddress(), headers: bearer(BAD_KEY) })).toBe(401);
  });

  it('does not take X-Forwarded-Proto from a client: no HSTS over plain HTTP', async () => {
    const res = await fetch(`${gw}/v1/sources`, { headers: { 'x-forwarded-proto': 'https' } });
    expect(res.headers.get('strict-transport-security')).toBeNull();
  });

  it('never refuses a valid key or session for its address, while its failures and unauthenticated calls get 429', async () => {
    const { secret } = await h.newAccount('professional');
    const client = loopbackAddress();
    for (let i = 0; i < LIMIT; i++) expect(await call(gw, { from: client, headers: bearer(BAD_KEY) })).toBe(401);
    expect(await call(gw, { from: client, headers: bearer(BAD_KEY) })).toBe(429);
    expect(await call(gw, { from: client })).toBe(429); // no credentials at all
    expect(await call(gw, { from: client, path: '/v1/auth/login', method: 'POST', body: { email: 'someone@example.com', password: 'guess guess guess' } })).toBe(429);
    expect(await call(gw, { from: client, headers: bearer(secret) })).toBe(200);
    expect(await call(gw, { from: client, headers: bearer(secret) })).toBe(200);
    expect(await call(gw, { from: client, headers: bearer(BAD_KEY) })).toBe(429);
  });
});

describe('behind trusted proxies', () => {
  it('with a hop count, counts each client behind the proxy by its own address, which a client cannot forge', async () => {
    const gw = (await h.gateway({ AUTH_FAILURES_PER_MINUTE: String(LIMIT), TRUST_PROXY: '1' })).url;
    const proxy = loopbackAddress();
    const [a, b] = [documentationAddress(), `2001:db8::${randomInt(1, 0xffff).toString(16)}`];
    // The proxy appends the address it saw; what the client wrote before it is the client's own invention.
    const viaProxy = (client: string, forged?: string) => ({ from: proxy, headers: { ...bearer(BAD_KEY), 'x-forwarded-for': forged ? `${forged}, ${client}` : client } });
    for (let i = 0; i < LIMIT; i++) expect(await call(gw, viaProxy(a, documentationAddress()))).toBe(401);
    expect(await call(gw, viaProxy(a, documentationAddress()))).toBe(429);
    expect(await call(gw, viaProxy(b))).toBe(401);
  });

  it('sends HSTS when the trusted proxy says the client came over HTTPS', async () => {
    const gw = (await h.gateway({ TRUST_PROXY: '127.0.0.0/8' })).url;
    const res = await fetch(`${gw}/v1/sources`, { headers: { 'x-forwarded-proto': 'https' } });
    expect(res.headers.get('strict-transport-security')).toBe('max-age=31536000; includeSubDomains');
  });

  it('counts an IPv6 client by its /64, so moving within it does not escape the limit', async () => {
    const gw = (await h.gateway({ AUTH_FAILURES_PER_MINUTE: String(LIMIT), TRUST_PROXY: '127.0.0.0/8' })).url;
    const block = ipv6Block();
    const from = loopbackAddress();
    for (let i = 0; i < LIMIT; i++) expect(await call(gw, { from, headers: { ...bearer(BAD_KEY), 'x-forwarded-for': `${block}::${i + 1}` } })).toBe(401);
    expect(await call(gw, { from, headers: { ...bearer(BAD_KEY), 'x-forwarded-for': `${block}:ffff::9` } })).toBe(429);
    expect(await call(gw, { from, headers: { ...bearer(BAD_KEY), 'x-forwarded-for': `${ipv6Block()}::1` } })).toBe(401);
  });

  // The proxy must not be on loopback to show what a real ingress does; the machine's own non-loopback address
  // stands in for it (a connection to it from this machine comes from it).
  const proxyAddress = Object.values(networkInterfaces())
    .flat()
    .find((i) => i && !i.internal && i.family === 'IPv4')?.address;
  (proxyAddress ? it : it.skip)('with the proxy’s address, one client’s failures behind it do not lock out the others', async () => {
    const g = await h.gateway({ AUTH_FAILURES_PER_MINUTE: String(LIMIT), TRUST_PROXY: `${proxyAddress}/32`, HOST: proxyAddress! });
    const a = documentationAddress();
    let b = documentationAddress();
    while (b === a) b = documentationAddress();
    const viaProxy = (client: string) => ({ from: proxyAddress!, headers: { ...bearer(BAD_KEY), 'x-forwarded-for': client } });
    for (let i = 0; i < LIMIT; i++) expect(await call(g.url, viaProxy(a))).toBe(401);
    expect(await call(g.url, viaProxy(a))).toBe(429);
    expect(await call(g.url, viaProxy(b))).toBe(401);
  });
});
