import { http } from '@dap/testing';
import { bearer, signUp, startHarness } from './harness.ts';

let h: Awaited<ReturnType<typeof startHarness>>;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h?.stop());

/**
 * The dashboard authenticates with a session cookie; its calls count in a bucket of their own, so a
 * customer browsing the dashboard never spends the plan limit their API keys rely on, while the dashboard
 * itself is still limited.
 */
it("keeps the dashboard's calls out of the account's API limit, and limits the dashboard on its own", async () => {
  const g = await h.gateway({ PLAN_LIMITS_OVERRIDE: 'starter=5,professional=5,enterprise=5', DASHBOARD_REQUESTS_PER_MINUTE: '8' });
  const { session } = await signUp(g.url, { email: `dash-limit-${h.suffix}@example.com`, accountName: 'Limits Ltd' });
  const created = await http('POST', `${g.url}/v1/keys`, { headers: session, body: { name: 'ci' } });
  expect(created.status).toBe(201);
  const key = bearer(created.body.secret as string);

  // The key spends 2 of its 5.
  for (let i = 0; i < 2; i++) expect((await http('GET', `${g.url}/v1/models`, { headers: key })).status).toBe(200);

  // The dashboard makes 7 more calls (8 with the key creation above), all admitted, in its own bucket…
  for (let i = 0; i < 7; i++) {
    const res = await http('GET', `${g.url}/v1/sources`, { headers: session });
    expect(res.status).toBe(200);
    expect(res.headers.get('ratelimit-policy')).toBe('"dashboard";q=8;w=60');
    expect(res.headers.get('x-ratelimit-remaining')).toBe(String(6 - i));
  }
  // …and is limited there: the ninth is refused, saying which limit it hit.
  const refused = await http('GET', `${g.url}/v1/sources`, { headers: session });
  expect(refused.status).toBe(429);
  expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
  expect(refused.body.detail).toMatch(/dashboard may make 8 requests per minute/);

  // The key's limit is untouched by all that: its third request leaves 2 of 5, and the usage it reports
  // counts the key's requests only.
  const third = await http('GET', `${g.url}/v1/models`, { headers: key });
  expect(third.status).toBe(200);
  expect(third.headers.get('ratelimit-policy')).toBe('"per-account";q=5;w=60');
  expect(third.headers.get('x-ratelimit-remaining')).toBe('2');
  const usage = await http('GET', `${g.url}/v1/usage`, { headers: key });
  expect(usage.body).toMatchObject({ limit: 5, used: 4, remaining: 1 });
  // Positive control: the key's own limit still applies.
  expect((await http('GET', `${g.url}/v1/models`, { headers: key })).status).toBe(200);
  const overKey = await http('GET', `${g.url}/v1/models`, { headers: key });
  expect(overKey.status).toBe(429);
  expect(overKey.body.detail).toMatch(/plan allows 5 requests per minute/);
}, 60_000);
