import { createLogger } from '@dap/logger';
import { createKafka } from '@dap/kafka';
import { http, waitFor } from '@dap/testing';
import { startGateway } from '../src/index.ts';
import { quietLogger, startHarness } from './harness.ts';

/** Gateways hear key revocations without consumer groups: scaling out and in leaves nothing on the brokers. */
let h: Awaited<ReturnType<typeof startHarness>>;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h?.stop());

const auth = (secret: string) => ({ authorization: `Bearer ${secret}` });

async function groupsOf(prefix: string): Promise<string[]> {
  const admin = createKafka({ brokers: h.stack.KAFKA_BROKERS.split(','), clientId: 'groups-probe', topicPrefix: prefix }, createLogger({ name: 'probe', level: 'silent' })).admin();
  await admin.connect();
  try {
    return (await admin.listGroups()).groups.map((g) => g.groupId).filter((g) => g.startsWith(prefix));
  } finally {
    await admin.disconnect();
  }
}

it('running, stopped and restarted gateways join no consumer group, and each still refuses a revoked key within 2 s', async () => {
  const prefix = `t${h.suffix}.`;
  const first = await h.gateway();
  const second = await startGateway(h.gatewayConfig(), { logger: quietLogger }); // stopped here, not by the harness
  expect(await groupsOf(prefix)).toEqual([]);

  // A gateway goes away and another takes its place: still no group, and both living ones hear revocations.
  await second.stop();
  const third = await h.gateway();
  expect(await groupsOf(prefix)).toEqual([]);
  const { accountId, secret, keyId } = await h.newAccount();
  for (const g of [first, third]) {
    for (let i = 0; i < 2; i++) expect((await http('GET', `${g.url}/v1/sources`, { headers: auth(secret) })).status).toBe(200);
    expect(g.keys.stats.memoryHits).toBeGreaterThan(0); // cached: only the eviction can refuse it before the 30-s TTL
  }
  await h.accounts.accounts.revokeKey(accountId, keyId);
  const revokedAt = Date.now();
  for (const g of [first, third]) {
    // The wait outlasts the 2-s promise, so a slow revocation fails on the time measured below.
    await waitFor(async () => (await http('GET', `${g.url}/v1/sources`, { headers: auth(secret) })).status === 401, { timeoutMs: 10_000, intervalMs: 50, what: 'revocation' });
  }
  expect(Date.now() - revokedAt).toBeLessThan(2_000);
}, 90_000);
