import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The build steps every deployable's Dockerfile shares, so the six Dockerfiles stay a few lines each:
 *
 *   node deploy/docker/workspaces.ts prepare <deployable-dir> <out>   (in the repo copy)
 *     <out>/manifests  the root package.json, the lock file and every workspace's package.json, unchanged:
 *                      all `npm ci -w <deployable>` needs (it checks them against the lock), so its layer is
 *                      cached until a manifest changes
 *     <out>/app        those workspaces' sources, without tests
 *   node workspaces.ts slim <node_modules>                              (after `npm install`)
 *     drops other platforms' prebuilt binaries that packages ship all at once (onnxruntime-node)
 *
 * The closure follows `dependencies` between @dap/* workspaces only, so the gateway's image has no DuckDB
 * and no onnxruntime: `npm ci -w` installs that workspace's production dependencies, and only the closure's
 * sources reach the image.
 */

interface Manifest {
  name: string;
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
  workspaces?: string[];
  [key: string]: unknown;
}

const readJson = (file: string) => JSON.parse(readFileSync(file, 'utf8')) as Manifest;

/** Every workspace of the repo: its package name → its directory relative to the root. */
export function listWorkspaces(root: string): Map<string, string> {
  const rootManifest = readJson(join(root, 'package.json'));
  const found = new Map<string, string>();
  for (const pattern of rootManifest.workspaces ?? []) {
    const dirs = pattern.endsWith('/*')
      ? readdirSync(join(root, pattern.slice(0, -2)), { withFileTypes: true })
          .filter((d) => d.isDirectory())
          .map((d) => `${pattern.slice(0, -2)}/${d.name}`)
      : [pattern];
    for (const dir of dirs) {
      if (existsSync(join(root, dir, 'package.json'))) found.set(readJson(join(root, dir, 'package.json')).name, dir);
    }
  }
  return found;
}

/** The deployable's directory and those of the workspaces it depends on at run time, transitively, sorted. */
export function workspaceClosure(root: string, deployableDir: string): string[] {
  const byName = listWorkspaces(root);
  const dirs = new Set<string>();
  const visit = (dir: string) => {
    if (dirs.has(dir)) return;
    dirs.add(dir);
    for (const dep of Object.keys(readJson(join(root, dir, 'package.json')).dependencies ?? {})) {
      const depDir = byName.get(dep);
      if (depDir) visit(depDir);
    }
  };
  if (!existsSync(join(root, deployableDir, 'package.json'))) throw new Error(`${deployableDir} is not a workspace`);
  visit(deployableDir);
  return [...dirs].sort();
}

function withoutDevDependencies(m: Manifest): Manifest {
  const copy = { ...m };
  delete copy.devDependencies;
  return copy;
}

export function prepare(root: string, deployableDir: string, out: string): string[] {
  const closure = workspaceClosure(root, deployableDir);
  const manifests = join(out, 'manifests');
  const app = join(out, 'app');
  rmSync(out, { recursive: true, force: true });
  mkdirSync(manifests, { recursive: true });
  mkdirSync(app, { recursive: true });

  for (const file of ['package.json', 'package-lock.json', '.npmrc']) if (existsSync(join(root, file))) cpSync(join(root, file), join(manifests, file));
  for (const dir of listWorkspaces(root).values()) {
    mkdirSync(join(manifests, dir), { recursive: true });
    cpSync(join(root, dir, 'package.json'), join(manifests, dir, 'package.json'));
  }

  for (const dir of closure) {
    mkdirSync(join(app, dir), { recursive: true });
    writeFileSync(join(app, dir, 'package.json'), `${JSON.stringify(withoutDevDependencies(readJson(join(root, dir, 'package.json'))), null, 2)}\n`);
    cpSync(join(root, dir, 'src'), join(app, dir, 'src'), {
      recursive: true,
      filter: (src) => !/\.test\.ts$/.test(src),
    });
  }
  return closure;
}

/** Platform directories of packages that ship every platform's native binaries in one tarball. */
const PER_PLATFORM_BINARIES = ['onnxruntime-node/bin/napi-v6'];

export function slim(nodeModules: string, platform: string = process.platform, arch: string = process.arch): string[] {
  const removed: string[] = [];
  for (const rel of PER_PLATFORM_BINARIES) {
    const base = join(nodeModules, rel);
    if (!existsSync(base)) continue;
    for (const os of readdirSync(base)) {
      for (const cpu of readdirSync(join(base, os))) {
        if (os === platform && cpu === arch) continue;
        rmSync(join(base, os, cpu), { recursive: true, force: true });
        removed.push(`${rel}/${os}/${cpu}`);
      }
      if (readdirSync(join(base, os)).length === 0) rmSync(join(base, os), { recursive: true });
    }
  }
  return removed;
}

function main(argv: string[]): void {
  const [command, a, b] = argv;
  if (command === 'prepare' && a && b) {
    const closure = prepare(process.cwd(), a, b);
    process.stdout.write(`workspaces for ${a}: ${closure.join(' ')}\n`);
  } else if (command === 'slim' && a) {
    const removed = slim(a);
    process.stdout.write(removed.length ? `removed other platforms' binaries: ${removed.join(' ')}\n` : 'nothing to slim\n');
  } else {
    process.stderr.write('usage: node workspaces.ts prepare <deployable-dir> <out> | slim <node_modules>\n');
    process.exit(2);
  }
}

// Run as a script (not when a test imports it): the entry file is this one.
if (/workspaces\.ts$/.test(process.argv[1] ?? '')) main(process.argv.slice(2));
