import { randomBytes } from 'node:crypto';
import type { Consumer } from 'kafkajs';
import { makeEvent, newId, webhookCreatedSchema, webhookListSchema, webhookSchema, type DomainEvent } from '@dap/contracts';
import { listen, type RunningServer } from '@dap/http';
import { createKafka } from '@dap/kafka';
import { OutboundGuard } from '@dap/netguard';
import { http, stackEnv, waitFor } from '@dap/testing';
import { createApp } from '../src/app.ts';
import { SecretBox } from '../src/domain/secret.ts';
import { WebhooksService } from '../src/domain/webhooks.service.ts';
import type { RunningWebhooks } from '../src/index.ts';
import { callerHeaders, clientFor, dropTestDatabase, silent, startWebhooks, testConfig } from './harness.ts';

describe('webhooks API', () => {
  const config = testConfig();
  let svc: RunningWebhooks;
  let strict: RunningServer;
  let watcher: Consumer;
  const published: DomainEvent[] = [];
  const alice = clientFor(() => svc);
  const bob = clientFor(() => svc);

  beforeAll(async () => {
    svc = await startWebhooks(config, { logger: silent });
    // The same service with production's SSRF setting, to show what registration refuses.
    const strictService = new WebhooksService({
      endpoints: svc.endpoints,
      deliveries: svc.deliveries,
      secrets: new SecretBox(randomBytes(32)),
      guard: new OutboundGuard({ allowPrivate: false }),
    });
    strict = await listen(
      createApp({ logger: silent, webhooks: strictService, internalSecret: config.INTERNAL_SECRET, bodyLimitBytes: 1_000_000, ready: async () => {} }),
      '127.0.0.1',
      0,
    );
    const kafka = createKafka({ brokers: config.KAFKA_BROKERS, clientId: 'watch', topicPrefix: config.KAFKA_TOPIC_PREFIX }, silent);
    watcher = kafka.consumer({ groupId: `${config.KAFKA_TOPIC_PREFIX}watch`, maxWaitTimeInMs: 50 });
    await watcher.connect();
    await watcher.subscribe({ topic: `${config.KAFKA_TOPIC_PREFIX}webhooks.events`, fromBeginning: true });
    await watcher.run({ eachMessage: async ({ message }) => void published.push(JSON.parse(message.value!.toString())) });
  });

  afterAll(async () => {
    await watcher?.disconnect();
    await strict?.close();
    await svc?.stop();
    await dropTestDatabase(config);
  });

  it('creates an endpoint: 201, Location, the whsec_ secret once, and webhook.created in the outbox', async () => {
    const res = await alice.call('POST', '/webhooks', { url: 'http://127.0.0.1:9/hooks', events: ['report.*', 'source.ready'], description: 'ops' });
    expect(res.status).toBe(201);
    expect(res.headers.get('location')).toBe(`/v1/webhooks/${res.body.id}`);
    expect(webhookCreatedSchema.parse(res.body)).toEqual(res.body);
    expect(res.body).toMatchObject({ url: 'http://127.0.0.1:9/hooks', events: ['report.*', 'source.ready'], description: 'ops', status: 'enabled', disabledReason: null });
    expect(res.body.id).toMatch(/^whk_[0-9A-Z]{26}$/);
    const secret: string = res.body.secret;
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(secret.slice(6), 'base64')).toHaveLength(32);

    const got = await alice.call('GET', `/webhooks/${res.body.id}`);
    expect(got.status).toBe(200);
    expect(webhookSchema.strict().parse(got.body)).toEqual(got.body);
    expect(got.body).not.toHaveProperty('secret');
    expect(got.text).not.toContain(secret.slice(6, 20));
    const list = await alice.call('GET', '/webhooks');
    expect(list.text).not.toContain(secret.slice(6, 20));

    // Stored sealed, never in clear.
    const stored = await svc.endpoints.coll.raw.findOne({ _id: res.body.id });
    expect(JSON.stringify(stored)).not.toContain(secret.slice(6));
    expect(stored?.secretSealed).toMatch(/^v1\./);

    const created = await waitFor(() => published.find((e) => e.type === 'webhook.created' && e.subject === res.body.id), { what: 'webhook.created' });
    expect(created).toMatchObject({ accountId: alice.accountId, data: { id: res.body.id, url: 'http://127.0.0.1:9/hooks' } });
  });

  it('defaults events to all and description to empty', async () => {
    const res = await alice.call('POST', '/webhooks', { url: 'https://hooks.example.com/a' });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ events: ['*'], description: '' });
  });

  it('lists newest first with a cursor, only the caller’s endpoints', async () => {
    await bob.call('POST', '/webhooks', { url: 'https://hooks.example.com/bob' });
    const first = await alice.call('GET', '/webhooks?limit=1');
    expect(first.status).toBe(200);
    expect(webhookListSchema.parse(first.body)).toBeTruthy();
    expect(first.body.data).toHaveLength(1);
    expect(first.body.data[0].url).toBe('https://hooks.example.com/a');
    expect(first.body.hasMore).toBe(true);
    const second = await alice.call('GET', `/webhooks?limit=1&cursor=${first.body.nextCursor}`);
    expect(second.body.data.map((w: { url: string }) => w.url)).toEqual(['http://127.0.0.1:9/hooks']);
    expect(second.body).toMatchObject({ hasMore: false, nextCursor: null });
    const bobs = await bob.call('GET', '/webhooks');
    expect(bobs.body.data.map((w: { url: string }) => w.url)).toEqual(['https://hooks.example.com/bob']);
  });

  it.each([
    ['no url', {}, 'url'],
    ['a non-URL', { url: 'not a url' }, 'url'],
    ['ftp', { url: 'ftp://example.com/x' }, 'url'],
    ['javascript', { url: 'javascript:alert(1)' }, 'url'],
    ['credentials in the URL', { url: 'https://user:pw@example.com/x' }, 'url'],
    ['an unknown event type', { url: 'https://example.com/x', events: ['foo.bar'] }, 'events.0'],
    ['an internal event type', { url: 'https://example.com/x', events: ['apikey.created'] }, 'events.0'],
    ['an empty filter list', { url: 'https://example.com/x', events: [] }, 'events'],
    ['a wrong type', { url: 'https://example.com/x', description: 5 }, 'description'],
    ['an unknown field', { url: 'https://example.com/x', secret: 'whsec_mine' }, 'secret'],
  ])('refuses %s with 400 and the bad field', async (_name, body, path) => {
    const res = await alice.call('POST', '/webhooks', body);
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toMatch(/application\/problem\+json/);
    expect(res.body.code).toBe('validation_failed');
    expect(res.body.errors.map((e: { path: string }) => e.path)).toContain(path);
  });

  it('refuses malformed JSON, another content type and $-operator keys with 400', async () => {
    expect((await alice.call('POST', '/webhooks', '{"url":', {})).status).toBe(400);
    const text = await http('POST', `${svc.url}/v1/webhooks`, { body: 'url=x', headers: { ...callerHeaders(alice.accountId), 'content-type': 'text/plain' } });
    expect(text.status).toBe(400);
    const op = await alice.call('POST', '/webhooks', { url: 'https://example.com/x', $where: '1' });
    expect(op.status).toBe(400);
  });

  it('refuses bad list parameters with 400', async () => {
    expect((await alice.call('GET', '/webhooks?limit=0')).status).toBe(400);
    expect((await alice.call('GET', '/webhooks?limit=101')).status).toBe(400);
    const badCursor = await alice.call('GET', '/webhooks?cursor=bm9wZQ');
    expect(badCursor.status).toBe(400);
    expect(badCursor.body.errors[0].path).toBe('cursor');
  });

  it('refuses private and loopback targets at registration when the operator does not allow them', async () => {
    for (const url of ['http://127.0.0.1:8080/x', 'http://10.0.0.8/x', 'http://[::1]/x', 'http://169.254.169.254/latest', 'http://localhost:3000/x', 'http://0.0.0.0/x']) {
      const res = await http('POST', `${strict.url}/v1/webhooks`, { body: { url }, headers: callerHeaders(alice.accountId) });
      expect({ url, status: res.status }).toEqual({ url, status: 422 });
      expect(res.body.errors[0].path).toBe('url');
    }
    const ok = await http('POST', `${strict.url}/v1/webhooks`, { body: { url: 'https://8.8.8.8/hook' }, headers: callerHeaders(alice.accountId) });
    expect(ok.status).toBe(201);
  });

  it('checks the URL again when a disabled endpoint is enabled: 422 for a target no longer allowed, and it stays disabled', async () => {
    const local = await alice.call('POST', '/webhooks', { url: 'http://127.0.0.1:9/enable-check' });
    expect(local.status).toBe(201);
    const reason = 'the endpoint answered 410 Gone';
    const notice = makeEvent('endpoint.disabled', { accountId: alice.accountId, subject: local.body.id, data: { endpointId: local.body.id, reason } });
    const disabled = await svc.endpoints.disable(alice.accountId, local.body.id, reason, notice);
    expect(disabled?.status).toBe('disabled');
    const refused = await http('POST', `${strict.url}/v1/webhooks/${local.body.id}/enable`, { headers: callerHeaders(alice.accountId) });
    expect([refused.status, refused.body.errors?.[0]?.path]).toEqual([422, 'url']);
    expect((await alice.call('GET', `/webhooks/${local.body.id}`)).body).toMatchObject({ status: 'disabled', disabledReason: 'the endpoint answered 410 Gone' });
    const enabled = await alice.call('POST', `/webhooks/${local.body.id}/enable`);
    expect([enabled.status, enabled.body.status, enabled.body.disabledReason]).toEqual([200, 'enabled', null]);
  });

  it('refuses link-local and cloud metadata targets even where private targets are allowed', async () => {
    for (const url of ['http://169.254.169.254/latest/meta-data', 'http://[fe80::1]/x', 'http://100.100.100.200/latest', 'http://[fd00:ec2::254]/latest']) {
      const res = await alice.call('POST', '/webhooks', { url });
      expect({ url, status: res.status, path: res.body.errors?.[0]?.path }).toEqual({ url, status: 422, path: 'url' });
    }
    expect((await alice.call('POST', '/webhooks', { url: 'http://127.0.0.1:9/x' })).status).toBe(201);
  });

  it("refuses the platform's own endpoints (its MongoDB, Kafka, Redis, this service) even where private targets are allowed", async () => {
    const env = stackEnv();
    const mongo = new URL(env.MONGO_URL);
    const kafkaPort = env.KAFKA_BROKERS.split(',')[0]!.split(':')[1];
    const ownPort = new URL(svc.url).port;
    for (const url of [
      `http://${mongo.host}/x`,
      `http://localhost:${mongo.port}/x`,
      `http://127.0.0.2:${kafkaPort}/`,
      `http://${new URL(env.REDIS_URL).host}/`,
      `http://[::ffff:127.0.0.1]:${ownPort}/v1/webhooks`,
    ]) {
      const res = await alice.call('POST', '/webhooks', { url });
      expect({ url, status: res.status, path: res.body.errors?.[0]?.path, message: res.body.errors?.[0]?.message }).toEqual({
        url,
        status: 422,
        path: 'url',
        message: expect.stringMatching(/is one of this platform's own endpoints/),
      });
    }
    expect((await alice.call('POST', '/webhooks', { url: `http://127.0.0.1:${Number(mongo.port) + 1}/x` })).status).toBe(201);
  });

  it('changes the URL with PATCH, checked exactly as at registration: 400 for a bad URL, 422 for a refused target, 404 for another account', async () => {
    const created = await alice.call('POST', '/webhooks', { url: 'https://hooks.example.com/before', description: 'edit me' });
    expect(created.status).toBe(201);
    const id: string = created.body.id;

    const ok = await alice.call('PATCH', `/webhooks/${id}`, { url: 'https://hooks.example.com/after' });
    expect(ok.status).toBe(200);
    expect(webhookSchema.strict().parse(ok.body)).toEqual(ok.body);
    expect(ok.body).toMatchObject({ id, url: 'https://hooks.example.com/after', description: 'edit me', events: ['*'] });
    expect((await alice.call('GET', `/webhooks/${id}`)).body.url).toBe('https://hooks.example.com/after');

    // The same 400 as at registration for a URL the schema refuses.
    for (const url of ['not a url', 'ftp://example.com/x', 'https://user:pw@example.com/x']) {
      const res = await alice.call('PATCH', `/webhooks/${id}`, { url });
      expect({ url, status: res.status, code: res.body.code, paths: res.body.errors?.map((e: { path: string }) => e.path) }).toEqual({
        url,
        status: 400,
        code: 'validation_failed',
        paths: expect.arrayContaining(['url']),
      });
    }

    // The platform's own endpoint and cloud metadata: the same 422 problem as registration gives.
    const ownUrl = `http://[::ffff:127.0.0.1]:${new URL(svc.url).port}/v1/webhooks`;
    for (const url of [ownUrl, 'http://169.254.169.254/latest/meta-data']) {
      const atRegistration = await alice.call('POST', '/webhooks', { url });
      const onPatch = await alice.call('PATCH', `/webhooks/${id}`, { url });
      expect(onPatch.status).toBe(422);
      expect(onPatch.headers.get('content-type')).toMatch(/application\/problem\+json/);
      const { instance: _a, requestId: _ra, ...patchProblem } = onPatch.body;
      const { instance: _b, requestId: _rb, ...registrationProblem } = atRegistration.body;
      expect(patchProblem).toEqual(registrationProblem);
      expect(onPatch.body.errors[0].path).toBe('url');
    }
    // A private target where the operator does not allow them.
    const strictOwn = await http('POST', `${strict.url}/v1/webhooks`, { body: { url: 'https://8.8.8.8/strict' }, headers: callerHeaders(alice.accountId) });
    expect(strictOwn.status).toBe(201);
    const privatePatch = await http('PATCH', `${strict.url}/v1/webhooks/${strictOwn.body.id}`, { body: { url: 'http://10.0.0.8/x' }, headers: callerHeaders(alice.accountId) });
    expect(privatePatch.status).toBe(422);
    expect(privatePatch.body.errors[0].path).toBe('url');

    // Nothing refused was stored.
    expect((await alice.call('GET', `/webhooks/${id}`)).body.url).toBe('https://hooks.example.com/after');
    expect((await alice.call('GET', `/webhooks/${strictOwn.body.id}`)).body.url).toBe('https://8.8.8.8/strict');

    // Another account's endpoint is not found, whether the URL is allowed or not, and stays as it was.
    expect((await bob.call('PATCH', `/webhooks/${id}`, { url: 'https://hooks.example.com/bob' })).status).toBe(404);
    expect((await bob.call('PATCH', `/webhooks/${id}`, { url: ownUrl })).status).toBe(404);
    expect((await alice.call('GET', `/webhooks/${id}`)).body.url).toBe('https://hooks.example.com/after');
  });

  it('answers 404 for another account’s id and for malformed or unknown ids, on every route', async () => {
    const mine = await alice.call('POST', '/webhooks', { url: 'https://hooks.example.com/private' });
    for (const id of [mine.body.id, 'whk_nope', newId('whk'), 'src_01JCQ3N6W4X8Z5Y7A9B2C4D6E8']) {
      const who = id === mine.body.id ? bob : alice;
      expect((await who.call('GET', `/webhooks/${id}`)).status).toBe(404);
      expect((await who.call('GET', `/webhooks/${id}/deliveries`)).status).toBe(404);
      expect((await who.call('POST', `/webhooks/${id}/test`)).status).toBe(404);
      expect((await who.call('DELETE', `/webhooks/${id}`)).status).toBe(404);
    }
    // Bob's attempts changed nothing.
    expect((await alice.call('GET', `/webhooks/${mine.body.id}`)).body.status).toBe('enabled');
  });

  it('answers 401 to a direct call without the gateway signature, and to a forged one', async () => {
    const bare = await http('GET', `${svc.url}/v1/webhooks`);
    expect(bare.status).toBe(401);
    expect(bare.body.code).toBe('unauthorized');
    const forged = await http('POST', `${svc.url}/v1/webhooks`, {
      body: { url: 'https://example.com/x' },
      headers: { ...callerHeaders(alice.accountId), 'x-dap-signature': 'A'.repeat(43) },
    });
    expect(forged.status).toBe(401);
  });

  it('deletes: 204, then 404, gone from the list, with webhook.deleted published', async () => {
    const made = await alice.call('POST', '/webhooks', { url: 'https://hooks.example.com/doomed' });
    const del = await alice.call('DELETE', `/webhooks/${made.body.id}`);
    expect(del.status).toBe(204);
    expect(del.text).toBe('');
    expect((await alice.call('GET', `/webhooks/${made.body.id}`)).status).toBe(404);
    expect((await alice.call('DELETE', `/webhooks/${made.body.id}`)).status).toBe(404);
    const list = await alice.call('GET', '/webhooks?limit=100');
    expect(list.body.data.map((w: { id: string }) => w.id)).not.toContain(made.body.id);
    const deleted = await waitFor(() => published.find((e) => e.type === 'webhook.deleted' && e.subject === made.body.id), { what: 'webhook.deleted' });
    expect(deleted).toMatchObject({ accountId: alice.accountId, data: { id: made.body.id } });
  });

  it('answers an empty deliveries log for a new endpoint, and 400 for a bad cursor', async () => {
    const made = await alice.call('POST', '/webhooks', { url: 'https://hooks.example.com/quiet' });
    const log = await alice.call('GET', `/webhooks/${made.body.id}/deliveries`);
    expect(log.status).toBe(200);
    expect(log.body).toEqual({ data: [], hasMore: false, nextCursor: null });
    expect((await alice.call('GET', `/webhooks/${made.body.id}/deliveries?cursor=eHl6`)).status).toBe(400);
  });
});
