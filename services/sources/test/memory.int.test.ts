import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { repoRoot } from '@dap/testing';

/**
 * Bounded memory (issue: a 1 GB CSV ingests with the service's RSS under 400 MB): the ingest soak
 * (bench/soak-ingest.ts) pulls a 1 GiB CSV from a URL through the sources service running as its own
 * process, with the production node flags, and fails when the kernel's peak-RSS counter of that process
 * reaches the budget. About 25 s; it caught a regression the strict CSV checks had brought (419 MB).
 */
const BUDGET_MB = 400;

test('a 1 GiB CSV from a URL ingests with the service’s peak RSS under 400 MB', async () => {
  const root = repoRoot();
  const child = spawn(process.execPath, ['--no-warnings', join(root, 'services/sources/bench/soak-ingest.ts'), '1024', String(BUDGET_MB)], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString('utf8')));
  child.stderr.on('data', (c: Buffer) => (out += c.toString('utf8')));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  const ready = /ready: ([\d,]+) rows from (\d+) MiB .* kernel peak \(VmHWM\) (\d+) MB/.exec(out);
  expect({ code, ready: Boolean(ready) }).toEqual({ code: 0, ready: true });
  const [, rows, mib, peakMB] = ready!;
  expect(Number(mib)).toBeGreaterThanOrEqual(1024);
  expect(Number(rows!.replaceAll(',', ''))).toBeGreaterThan(17_000_000);
  expect(Number(peakMB)).toBeLessThan(BUDGET_MB);
}, 240_000);
