import { hostname } from 'node:os';
import { claimTtlMsOf, loadWebhooksConfig } from './config.ts';

const base = {
  PORT: '0',
  MONGO_URL: 'mongodb://127.0.0.1:1',
  KAFKA_BROKERS: '127.0.0.1:1',
  INTERNAL_SECRET: 'x'.repeat(32),
  WEBHOOK_SECRET_KEY: 'ab'.repeat(32),
};

describe('webhooks config', () => {
  it('defaults: 24 h secret overlap, lease of 2 × timeout + 10 s, the hostname as instance id, 3 partitions at once', () => {
    const c = loadWebhooksConfig(base);
    expect(c.WEBHOOK_SECRET_OVERLAP_MS).toBe(24 * 3_600_000);
    expect(claimTtlMsOf(c)).toBe(40_000);
    expect(c.INSTANCE_ID).toBe(hostname());
    expect(c.WEBHOOK_CONSUMER_CONCURRENCY).toBe(3);
    expect(c.WEBHOOK_CONSUMER_MAX_ATTEMPTS).toBe(5);
  });

  it('takes a claim TTL that outlasts an attempt, and refuses one that does not', () => {
    expect(claimTtlMsOf(loadWebhooksConfig({ ...base, WEBHOOK_CLAIM_TTL_MS: '3000', WEBHOOK_TIMEOUT_MS: '1000' }))).toBe(3_000);
    expect(() => loadWebhooksConfig({ ...base, WEBHOOK_CLAIM_TTL_MS: '5000' })).toThrow(/WEBHOOK_CLAIM_TTL_MS/);
    expect(() => loadWebhooksConfig({ ...base, WEBHOOK_SECRET_OVERLAP_MS: '-1' })).toThrow(/WEBHOOK_SECRET_OVERLAP_MS/);
    expect(() => loadWebhooksConfig({ ...base, INSTANCE_ID: '' })).toThrow(/INSTANCE_ID/);
  });
});
