import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repoRoot } from '@dap/testing';
import { freePort } from '../../deploy/local/supervisor.ts';

/**
 * `npm start` and `npm test` work from a checkout that other users cannot enter (root cloning into /root or
 * a `mktemp -d` folder, both mode 0700): PostgreSQL and MariaDB run as their system users, so the stack
 * script keeps their data where those users can reach it. A copy of the script in such a folder starts and
 * stops both servers on ports of their own.
 */
const root = repoRoot();
let checkout: string;
let systemDir: string;

function stack(...args: string[]) {
  const r = spawnSync('bash', [join(checkout, 'deploy/local/stack.sh'), ...args], {
    encoding: 'utf8',
    env: { ...process.env, STACK_SYSTEM_DIR: systemDir, STACK_POSTGRES_PORT: ports.pg, STACK_MARIADB_PORT: ports.mariadb },
    timeout: 120_000,
  });
  return { status: r.status, out: `${r.stdout}\n${r.stderr}` };
}

const ports = { pg: '', mariadb: '' };

beforeAll(async () => {
  checkout = mkdtempSync(join(tmpdir(), 'dap-private-'));
  // Where the script keeps those servers' data: below a directory anyone may traverse, as /var/tmp is.
  const sysParent = mkdtempSync(join(tmpdir(), 'dap-sys-'));
  chmodSync(sysParent, 0o711);
  systemDir = join(sysParent, 'stack');
  expect(statSync(checkout).mode & 0o777).toBe(0o700);
  mkdirSync(join(checkout, 'deploy/local'), { recursive: true });
  copyFileSync(join(root, 'deploy/local/stack.sh'), join(checkout, 'deploy/local/stack.sh'));
  // The downloads are the checkout's own (cached); only the tree's permissions differ.
  symlinkSync(join(root, '.cache'), join(checkout, '.cache'));
  symlinkSync(join(root, 'deploy/local/jvm'), join(checkout, 'deploy/local/jvm'));
  chmodSync(checkout, 0o700);
  ports.pg = String(await freePort());
  ports.mariadb = String(await freePort());
});

afterAll(() => {
  stack('stop-one', 'test', 'postgres');
  stack('stop-one', 'test', 'mariadb');
  rmSync(checkout, { recursive: true, force: true });
  rmSync(join(systemDir, '..'), { recursive: true, force: true });
});

it('starts PostgreSQL from a checkout only root can enter', () => {
  const up = stack('start-one', 'test', 'postgres');
  expect(up.out).toContain('postgres ready');
  expect(up.status).toBe(0);
  const psql = spawnSync('psql', [`postgres://dap:dap-local-pw@127.0.0.1:${ports.pg}/dap`, '-tAc', 'SELECT 40 + 2'], { encoding: 'utf8' });
  expect(psql.stdout.trim()).toBe('42');
  expect(stack('stop-one', 'test', 'postgres').out).toContain('postgres stopped');
}, 180_000);

it('starts MariaDB from a checkout only root can enter', () => {
  const up = stack('start-one', 'test', 'mariadb');
  expect(up.out).toContain('mariadb ready');
  expect(up.status).toBe(0);
  const q = spawnSync('mariadb', ['--no-defaults', '-h', '127.0.0.1', '-P', ports.mariadb, '-u', 'dap', '-pdap-local-pw', 'dap', '-N', '-e', 'SELECT 40 + 2'], {
    encoding: 'utf8',
  });
  expect(q.stdout.trim()).toBe('42');
  expect(stack('stop-one', 'test', 'mariadb').out).toContain('mariadb stopped');
}, 180_000);
