import type { ReceivedRequest } from '@dap/testing';
import type { Recorder } from '../system.ts';

/**
 * Steady load through the gateway, at a fixed rate and without waiting for answers (an open loop, as real
 * clients behave): source creates, queries, predictions, webhook creates, and reads. It remembers every
 * write the API acknowledged (201/202) so a test can prove afterwards that none was lost, and that every
 * event those writes promised reached a webhook receiver.
 */
export interface Acked {
  sources: string[];
  reports: string[];
  webhooks: string[];
  predictions: string[];
}

export interface LoadOptions {
  rec: Recorder;
  gw: string;
  headers: Record<string, string>;
  perSecond: number;
  /** A ready source for queries, and a model to predict with. */
  sourceId: string;
  modelId: string;
  /** URL for the webhooks the load creates (they subscribe to webhook.test only, so they stay quiet). */
  sinkUrl: string;
  timeoutMs?: number;
}

type Action = 'createSource' | 'query' | 'predict' | 'createWebhook' | 'list' | 'read';
const MIX: Action[] = ['createSource', 'query', 'list', 'predict', 'createSource', 'read', 'createWebhook', 'query', 'predict', 'list'];
const SERIES = Array.from({ length: 28 }, (_, i) => 100 + i + 10 * Math.sin((2 * Math.PI * i) / 7));

export class Load {
  readonly acked: Acked = { sources: [], reports: [], webhooks: [], predictions: [] };
  readonly statuses = new Map<string, number>();
  requests = 0;
  private readonly opts: LoadOptions;
  private timer: NodeJS.Timeout | null = null;
  private readonly inFlight = new Set<Promise<void>>();
  private n = 0;

  constructor(opts: LoadOptions) {
    this.opts = opts;
  }

  start(): void {
    if (this.timer) return;
    const period = 1000 / this.opts.perSecond;
    const t0 = Date.now();
    let sent = 0;
    // Catch up on missed ticks so the rate holds even when the event loop is busy.
    this.timer = setInterval(
      () => {
        const due = Math.floor((Date.now() - t0) / period);
        while (sent < due) {
          sent++;
          const p = this.one().finally(() => this.inFlight.delete(p));
          this.inFlight.add(p);
        }
      },
      Math.max(5, Math.floor(period / 2)),
    );
  }

  /** Stops sending and waits for every request in flight. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await Promise.allSettled([...this.inFlight]);
  }

  /** Status counts as a readable line, e.g. `201×40 200×80 503×3 ECONNREFUSED×12`. */
  summary(): string {
    return [...this.statuses]
      .sort()
      .map(([k, v]) => `${k}×${v}`)
      .join(' ');
  }

  private async one(): Promise<void> {
    const { rec, gw, headers, sourceId, modelId, sinkUrl } = this.opts;
    const action = MIX[this.n++ % MIX.length]!;
    const timeoutMs = this.opts.timeoutMs ?? 15_000;
    const call = (method: string, path: string, body?: unknown) => rec.call(gw, method, path, { headers, timeoutMs, ...(body !== undefined ? { body } : {}) });
    let res;
    switch (action) {
      case 'createSource':
        res = await call('POST', '/v1/sources', { type: 'inline', name: `load ${this.n}`, rows: [{ n: this.n, v: this.n * 1.5, tag: `t${this.n % 5}` }] });
        if (res.status === 201) this.acked.sources.push(res.json.id);
        break;
      case 'query':
        res = await call('POST', '/v1/analytics/query', {
          sourceId,
          measures: [
            { op: 'count', as: 'n' },
            { op: 'sum', field: 'y', as: 'y' },
          ],
          dimensions: ['country'],
        });
        if (res.status === 201 || res.status === 202) this.acked.reports.push(res.json.id);
        break;
      case 'predict':
        res = await call('POST', `/v1/models/${modelId}/predict`, { inputs: [{ series: SERIES, horizon: 3, seasonLength: 7 }] });
        if (res.status === 200 && res.json?.id) this.acked.predictions.push(res.json.id);
        break;
      case 'createWebhook':
        // Keep the account under its endpoint cap on long runs: past 20, delete the oldest instead. A delete
        // without a 204 may still have happened, so that endpoint is no longer checked either way.
        if (this.acked.webhooks.length >= 20) {
          const id = this.acked.webhooks.shift()!;
          res = await call('DELETE', `/v1/webhooks/${id}`);
        } else {
          res = await call('POST', '/v1/webhooks', { url: sinkUrl, events: ['webhook.test'] });
          if (res.status === 201) this.acked.webhooks.push(res.json.id);
        }
        break;
      case 'list':
        res = await call('GET', '/v1/sources?limit=5');
        break;
      case 'read': {
        const id = this.acked.sources[this.acked.sources.length - 1] ?? sourceId;
        res = await call('GET', `/v1/sources/${id}`);
        break;
      }
    }
    this.requests++;
    const key = res.error ?? String(res.status);
    this.statuses.set(key, (this.statuses.get(key) ?? 0) + 1);
  }
}

export interface EventCheck {
  missing: string[];
  /** (type, subject) pairs delivered under more than one webhook-id: a real duplicate, not a retry. */
  duplicates: string[];
  delivered: number;
}

/**
 * Every acknowledged write's events, as a receiver subscribed to `*` must have got them: each source its
 * source.created and source.ready (or failed), each report its report.completed (or failed), each
 * prediction its prediction.completed. The same event may arrive twice only with the same webhook-id.
 */
export function checkEvents(acked: Acked, received: readonly ReceivedRequest[]): EventCheck {
  const byKey = new Map<string, Set<string>>();
  for (const r of received) {
    let body: { type?: string; data?: { id?: string } };
    try {
      body = JSON.parse(r.body);
    } catch {
      continue;
    }
    const key = `${body.type} ${body.data?.id}`;
    const ids = byKey.get(key) ?? new Set<string>();
    ids.add(String(r.headers['webhook-id']));
    byKey.set(key, ids);
  }
  const has = (type: string, id: string) => byKey.has(`${type} ${id}`);
  const missing: string[] = [];
  for (const id of acked.sources) {
    if (!has('source.created', id)) missing.push(`source.created ${id}`);
    if (!has('source.ready', id) && !has('source.failed', id)) missing.push(`source.ready|failed ${id}`);
  }
  for (const id of acked.reports) if (!has('report.completed', id) && !has('report.failed', id)) missing.push(`report.completed|failed ${id}`);
  for (const id of acked.predictions) if (!has('prediction.completed', id)) missing.push(`prediction.completed ${id}`);
  const duplicates = [...byKey].filter(([, ids]) => ids.size > 1).map(([k, ids]) => `${k}: ${[...ids].join(', ')}`);
  return { missing, duplicates, delivered: received.length };
}
