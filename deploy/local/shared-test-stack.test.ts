import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const lib = join(import.meta.dirname, 'shared-test-stack.sh');

/** Runs a script that sources the library in a folder whose deploy/local/stack.sh only records its calls. */
function run(stackRuns: boolean): string[] {
  const dir = mkdtempSync(join(tmpdir(), 'shared-stack-'));
  try {
    mkdirSync(join(dir, 'deploy', 'local'), { recursive: true });
    writeFileSync(join(dir, 'deploy', 'local', 'stack.sh'), `echo "$*" >> calls\n[[ $1 != status ]] || exit ${stackRuns ? 0 : 3}\n`);
    writeFileSync(join(dir, 'deploy', 'local', 'shared-test-stack.sh'), readFileSync(lib));
    const r = spawnSync('bash', ['-c', 'set -Eeuo pipefail; source deploy/local/shared-test-stack.sh; test_stack_up; trap test_stack_release EXIT; echo work >> calls'], {
      cwd: dir,
      encoding: 'utf8',
    });
    expect(r.status).toBe(0);
    return readFileSync(join(dir, 'calls'), 'utf8').trim().split('\n');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

it('starts the test stack when none runs and stops it at exit', () => {
  expect(run(false)).toEqual(['status test', 'up test', 'work', 'down test']);
});

it('leaves a stack that already runs alone', () => {
  expect(run(true)).toEqual(['status test', 'work']);
});
