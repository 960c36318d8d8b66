import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRedis, type Redis } from '@dap/redis';
import { waitFor } from '@dap/testing';
import { freePort } from '../../../deploy/local/supervisor.ts';

/** A master, its replica and one Sentinel (quorum 1), each a redis-server of its own on free ports. */
const dir = mkdtempSync(join(tmpdir(), 'dap-sentinel-'));
const children = new Map<string, ChildProcess>();
let ports: { master: number; replica: number; sentinel: number };
let client: Redis | undefined;

function start(name: string, args: string[]): void {
  const child = spawn('redis-server', args, { stdio: 'ignore' });
  children.set(name, child);
}

const serverArgs = (port: number) => ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir];

beforeAll(async () => {
  ports = { master: await freePort(), replica: await freePort(), sentinel: await freePort() };
  start('master', serverArgs(ports.master));
  start('replica', [...serverArgs(ports.replica), '--replicaof', '127.0.0.1', String(ports.master)]);
  const conf = join(dir, 'sentinel.conf');
  writeFileSync(
    conf,
    [
      `port ${ports.sentinel}`,
      'bind 127.0.0.1',
      `dir ${dir}`,
      `sentinel monitor dap-test 127.0.0.1 ${ports.master} 1`,
      'sentinel down-after-milliseconds dap-test 1000',
      'sentinel failover-timeout dap-test 10000',
      '',
    ].join('\n'),
  );
  start('sentinel', [conf, '--sentinel']);
  const probe = createRedis(`redis://127.0.0.1:${ports.sentinel}`);
  try {
    // The Sentinel must know the replica before it can fail over to it.
    await waitFor(async () => ((await probe.call('SENTINEL', 'REPLICAS', 'dap-test')) as unknown[]).length === 1, { what: 'the Sentinel to see the replica', timeoutMs: 20_000 });
  } finally {
    probe.disconnect();
  }
}, 30_000);

afterAll(() => {
  client?.disconnect();
  for (const child of children.values()) if (child.exitCode === null) child.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

const servedPort = async (r: Redis) => Number(/tcp_port:(\d+)/.exec(await r.info('server'))![1]);

it('reaches the master through the Sentinel, and after the master dies writes go to the promoted replica', async () => {
  client = createRedis(`redis+sentinel://127.0.0.1:${ports.sentinel}/dap-test`);
  client.on('error', () => {}); // refused commands during the failover are what the test waits through
  await waitFor(async () => (await client!.set('before', 'failover')) === 'OK', { what: 'a first write through the Sentinel' });
  expect(await servedPort(client)).toBe(ports.master);
  // The replica has it (its first sync may still be running when the test starts).
  await waitFor(async () => (await client!.call('WAIT', '1', '500')) === 1, { what: 'the replica to acknowledge the write', timeoutMs: 15_000 });

  children.get('master')!.kill('SIGKILL');
  const killedAt = Date.now();
  await waitFor(
    async () => {
      try {
        return (await client!.set('after', 'failover')) === 'OK';
      } catch {
        return false; // refused while the master is down and until the Sentinel has promoted the replica
      }
    },
    { what: 'a write after the failover', timeoutMs: 30_000, intervalMs: 100 },
  );
  const recoveredMs = Date.now() - killedAt;
  expect(await servedPort(client)).toBe(ports.replica);
  expect(await client.get('before')).toBe('failover'); // the acknowledged and replicated write survived
  expect(await client.get('after')).toBe('failover');
  expect(recoveredMs).toBeLessThan(30_000);
}, 60_000);
