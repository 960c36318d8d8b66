import { waitFor } from '@dap/testing';
import type { Acked } from './load.ts';
import { bearer, type Recorder, type System } from '../system.ts';

/** Settings that make recovery observable within a test: short webhook retries and claim leases, quick sweeps. */
export const FAULT_ENV: Record<string, string> = {
  WEBHOOK_TIMEOUT_MS: '3000',
  WEBHOOK_RETRY_SCHEDULE_MS: '0,500,1000,2000,4000,8000,15000,30000',
  WEBHOOK_POLL_MS: '200',
  SYNC_LEASE_MS: '5000',
  SYNC_SWEEP_MS: '1000',
};

const ROWS = Array.from({ length: 30 }, (_, i) => ({ x: i, y: 2 * i + 1, country: ['FR', 'DE', 'US'][i % 3]! }));

/**
 * An account with a `*` webhook pointing at `<receiver>/all`, a ready source for queries and the built-in
 * forecast model: what the load needs.
 */
export async function prepareAccount(sys: System, rec: Recorder, receiverUrl: string, plan: 'starter' | 'professional' | 'enterprise') {
  const account = sys.createAccount(`Faults ${plan}`, plan);
  const headers = bearer(account.apiKey);
  const hook = await rec.call(sys.gw, 'POST', '/v1/webhooks', { headers, body: { url: `${receiverUrl}/all`, events: ['*'] } });
  if (hook.status !== 201) throw new Error(`webhook: ${hook.status} ${hook.text}`);
  const src = await rec.call(sys.gw, 'POST', '/v1/sources', { headers, body: { type: 'inline', name: 'base', rows: ROWS } });
  if (src.status !== 201) throw new Error(`source: ${src.status} ${src.text}`);
  const sourceId = src.json.id as string;
  await waitFor(async () => (await rec.call(sys.gw, 'POST', '/v1/analytics/query', { headers, body: { sourceId, measures: [{ op: 'count' }] } })).status === 201, {
    timeoutMs: 30_000,
    what: 'base source queryable',
  });
  const models = await rec.call(sys.gw, 'GET', '/v1/models?limit=100', { headers });
  const modelId = (models.json.data as Array<{ id: string; name: string }>).find((m) => m.name === 'forecast')!.id;
  return { account, headers, sourceId, modelId, webhookId: hook.json.id as string, webhookSecret: hook.json.secret as string };
}

/** Every acknowledged write, read back: the ids that are no longer there (must be none). */
export async function verifyAcked(rec: Recorder, gw: string, headers: Record<string, string>, acked: Acked): Promise<string[]> {
  const lost: string[] = [];
  const check = async (path: string) => {
    // A read may race a restart that is just finishing: retry briefly before calling it lost.
    const r = await waitFor(
      async () => {
        const res = await rec.call(gw, 'GET', path, { headers });
        return res.status === 200 || res.status === 404 ? res : null;
      },
      { timeoutMs: 10_000, what: `read ${path}` },
    ).catch(() => null);
    if (!r || r.status !== 200) lost.push(`${path} → ${r?.status ?? 'no answer'}`);
  };
  for (const id of acked.sources) await check(`/v1/sources/${id}`);
  for (const id of acked.reports) await check(`/v1/analytics/reports/${id}`);
  for (const id of acked.webhooks) await check(`/v1/webhooks/${id}`);
  return lost;
}
