import { connect, createServer, type Server, type Socket } from 'node:net';
import { stackEnv } from '@dap/testing';
import { StartupError } from '@dap/config';
import { connectMongo } from '@dap/mongo';

/**
 * A TCP proxy to the test stack's MongoDB that holds every connection opened in its first `stallMs` without
 * an answer until then: a database that takes longer than the driver's 3-s timeouts to answer, as under
 * machine load. Connections opened later pass straight through.
 */
async function stallingProxy(target: { host: string; port: number }, stallMs: number) {
  const until = Date.now() + stallMs;
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    sockets.add(client);
    client.pause();
    const open = () => {
      if (client.destroyed) return;
      const upstream = connect(target.port, target.host);
      sockets.add(upstream);
      client.pipe(upstream).on('error', () => client.destroy());
      upstream.pipe(client).on('error', () => upstream.destroy());
      upstream.on('error', () => client.destroy());
      client.on('error', () => upstream.destroy());
      client.resume();
    };
    setTimeout(open, Math.max(0, until - Date.now()));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  return {
    port,
    close: () => {
      for (const s of sockets) s.destroy();
      return new Promise<void>((r) => server.close(() => r()));
    },
  };
}

const mongo = new URL(stackEnv().MONGO_URL);
const lines: { obj: Record<string, unknown>; msg: string }[] = [];
const logger = { warn: (obj: object, msg: string) => void lines.push({ obj: obj as Record<string, unknown>, msg }) };
beforeEach(() => (lines.length = 0));

it('waits out a MongoDB that answers only after 4 s instead of exiting, logging the retry', async () => {
  const proxy = await stallingProxy({ host: mongo.hostname, port: Number(mongo.port) }, 4_000);
  try {
    const started = Date.now();
    const handle = await connectMongo(`mongodb://127.0.0.1:${proxy.port}`, 'startup_test', { logger, startupTimeoutMs: 20_000 });
    try {
      await handle.ping();
      expect(Date.now() - started).toBeGreaterThanOrEqual(3_000);
      expect(lines.length).toBeGreaterThanOrEqual(1);
      expect(lines[0]!.msg).toBe(`MongoDB at mongodb://127.0.0.1:${proxy.port} not reachable yet; retrying`);
      expect(lines[0]!.obj).toMatchObject({ attempt: 1, startupTimeoutMs: 20_000, err: expect.stringMatching(/^MongoServerSelectionError: /) });
    } finally {
      await handle.close();
    }
  } finally {
    await proxy.close();
  }
}, 30_000);

it('gives up after the start-up period with a clear error, with no credentials in it or in the log', async () => {
  const closed = await stallingProxy({ host: '127.0.0.1', port: 1 }, 0);
  await closed.close(); // a port nothing listens on
  const url = `mongodb://dap-app:Sup3rSecretPw@127.0.0.1:${closed.port}/dap?authSource=admin`;
  const err = (await connectMongo(url, 'dap', { logger, startupTimeoutMs: 1_000 }).catch((e: unknown) => e)) as Error;
  expect(err).toBeInstanceOf(StartupError);
  expect(err.message).toMatch(
    new RegExp(
      `^MongoDB at mongodb://127\\.0\\.0\\.1:${closed.port} did not answer within the start-up period of 1000 ms \\(\\d+ attempts\\); last error: MongoServerSelectionError: connect ECONNREFUSED`,
    ),
  );
  const everything = JSON.stringify(lines) + err.message + String(err.stack) + JSON.stringify(err.cause, (_k, v: unknown) => (v instanceof Map ? [...v] : v));
  expect(everything).not.toContain('Sup3rSecretPw');
  expect(everything).not.toContain('dap-app');
}, 30_000);
