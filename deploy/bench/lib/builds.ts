import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, readlinkSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

/**
 * The tree of a commit of the checkout at `root`, runnable, unpacked once into .local/bench/builds/<sha>:
 * third-party packages are this checkout's (symlinks), @dap/* link to the build's own libs (the links are
 * relative, so a copy of them points there), as does any workspace's own node_modules (the gateway's lru-cache).
 * For A/B runs of one component's builds side by side (gateway-ab.ts, services/analytics/groupby-ab.ts).
 */
export function unpackBuild(root: string, commit: string): string {
  const sha = execFileSync('git', ['rev-parse', '--verify', `${commit}^{commit}`], { cwd: root, encoding: 'utf8' }).trim();
  const dir = join(root, '.local', 'bench', 'builds', sha);
  if (existsSync(join(dir, '.ready'))) return dir;
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(join(dir, 'node_modules'), { recursive: true });
  execFileSync('bash', ['-c', `git archive ${sha} | tar -x -C '${dir}'`], { cwd: root });
  for (const entry of readdirSync(join(root, 'node_modules'))) {
    if (entry === '@dap') cpSync(join(root, 'node_modules', entry), join(dir, 'node_modules', entry), { recursive: true, verbatimSymlinks: true });
    else symlinkSync(join(root, 'node_modules', entry), join(dir, 'node_modules', entry));
  }
  for (const ws of ['gateway', 'libs', 'services']) {
    for (const sub of ws === 'gateway' ? [''] : readdirSync(join(root, ws))) {
      const own = join(root, ws, sub, 'node_modules');
      if (!existsSync(own)) continue;
      mkdirSync(join(dir, ws, sub, 'node_modules'), { recursive: true });
      for (const entry of readdirSync(own)) if (!entry.startsWith('.')) symlinkSync(join(own, entry), join(dir, ws, sub, 'node_modules', entry));
    }
  }
  if (resolve(dir, 'node_modules/@dap', readlinkSync(join(dir, 'node_modules/@dap/http'))) !== resolve(dir, 'libs/http')) {
    throw new Error(`${dir}/node_modules/@dap/* do not link to its own libs`);
  }
  writeFileSync(join(dir, '.ready'), sha);
  return dir;
}
