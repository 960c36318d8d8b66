import { connect, createServer, type Socket } from 'node:net';
import { StartupError } from '@dap/config';
import { createLogger } from '@dap/logger';
import { waitForKafka } from '@dap/kafka';
import { stackEnv } from '@dap/testing';
import { freePort } from '../../../deploy/local/supervisor.ts';

const [brokerHost, brokerPort] = stackEnv().KAFKA_BROKERS.split(',')[0]!.split(':') as [string, string];

/** Collects what the logger writes, to check the retry lines and that no secret is among them. */
function capture() {
  const lines: Record<string, unknown>[] = [];
  const logger = createLogger({ name: 'kafka-startup-test', level: 'info', destination: { write: (l: string) => void lines.push(JSON.parse(l)) } });
  return { lines, logger };
}

it('waits for a broker that comes up after start-up began, logging each retry', async () => {
  const port = await freePort();
  const sockets = new Set<Socket>();
  const proxy = createServer((client) => {
    const upstream = connect(Number(brokerPort), brokerHost);
    sockets.add(client).add(upstream);
    client.pipe(upstream);
    upstream.pipe(client);
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
  });
  const opened = setTimeout(() => proxy.listen(port, '127.0.0.1'), 1_500); // nothing listens before then
  const { lines, logger } = capture();
  try {
    await waitForKafka({ brokers: [`127.0.0.1:${port}`], clientId: 'startup-test', topicPrefix: '', startupTimeoutMs: 20_000 }, logger);
    const retries = lines.filter((l) => l.msg === `Kafka at 127.0.0.1:${port} not reachable yet; retrying`);
    expect(retries.length).toBeGreaterThanOrEqual(2);
    expect(retries.map((l) => l.attempt)).toEqual(retries.map((_l, i) => i + 1));
    expect(retries[0]!.err).toMatch(/ECONNREFUSED/);
  } finally {
    clearTimeout(opened);
    for (const s of sockets) s.destroy();
    await new Promise((r) => proxy.close(r));
  }
}, 30_000);

it('fails at once, and clearly, when the broker refuses the SASL handshake; the password appears nowhere', async () => {
  const { lines, logger } = capture();
  const started = Date.now();
  const err = (await waitForKafka(
    {
      brokers: [`${brokerHost}:${brokerPort}`],
      clientId: 'startup-test',
      topicPrefix: '',
      startupTimeoutMs: 20_000,
      sasl: { mechanism: 'scram-sha-256', username: 'svc', password: 'Kafka-Pw-0xF00D' },
    },
    logger,
  ).catch((e: unknown) => e)) as Error;
  expect(err).toBeInstanceOf(StartupError);
  expect(err.message).toMatch(/^Kafka at .+: KafkaJSProtocolError: .*SASL.* \(not retried: waiting cannot fix this\)$/);
  expect(Date.now() - started).toBeLessThan(5_000);
  expect(lines).toEqual([]);
  expect(err.message + String(err.stack)).not.toContain('Kafka-Pw-0xF00D');
}, 30_000);
