import { spawnSync } from 'node:child_process';
import { builtinModules } from 'node:module';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '@dap/config';
import { repoRoot } from '@dap/testing';
import { prepare, slim, workspaceClosure } from '../../deploy/docker/workspaces.ts';
import { nodeFlagsOf } from '../../deploy/local/supervisor.ts';
import { dirOf, entryOf, knownEnv, NAMES, SHAPES } from './deployables.ts';

/**
 * The Dockerfiles, checked offline (no Docker engine here): each is parsed into stages and instructions
 * and held to the image contract — Node 24 slim, multi-stage, production dependencies only, non-root,
 * a HEALTHCHECK on /healthz, the port and env names of the service's config schema, its own entry point —
 * and the workspace pruning they rely on is exercised for real.
 */
const root = repoRoot();
const NODE_IMAGE = 'node:24-slim';

interface Instruction {
  op: string;
  args: string;
}
interface Stage {
  from: string;
  name: string | undefined;
  body: Instruction[];
}

/** Dockerfile syntax as far as these files use it: comments, `\` continuations, one instruction a line. */
function parseDockerfile(text: string): Stage[] {
  const logical: string[] = [];
  let pending = '';
  for (const raw of text.split('\n')) {
    if (/^\s*#/.test(raw) && !pending) continue;
    if (/^\s*#/.test(raw)) continue; // a comment inside a continuation
    const line = raw.trimEnd();
    if (line.endsWith('\\')) {
      pending += `${line.slice(0, -1)} `;
      continue;
    }
    const full = (pending + line).trim();
    pending = '';
    if (full) logical.push(full);
  }
  const stages: Stage[] = [];
  for (const l of logical) {
    const m = /^(\w+)\s+(.*)$/s.exec(l);
    if (!m) throw new Error(`not an instruction: ${l}`);
    const op = m[1]!.toUpperCase();
    const args = m[2]!.replace(/\s+/g, ' ').trim();
    if (op === 'FROM') {
      const f = /^(?:--platform=\S+\s+)?(\S+)(?:\s+AS\s+(\S+))?$/i.exec(args);
      stages.push({ from: f![1]!, name: f![2], body: [] });
    } else {
      if (!stages.length) throw new Error(`${op} before FROM`);
      stages[stages.length - 1]!.body.push({ op, args });
    }
  }
  return stages;
}

const all = (s: Stage, op: string) => s.body.filter((i) => i.op === op);
const one = (s: Stage, op: string) => {
  const found = all(s, op);
  if (found.length !== 1) throw new Error(`expected one ${op} in stage ${s.name ?? '(final)'}, found ${found.length}`);
  return found[0]!.args;
};
/** `ENV A=1 B=2` → {A: '1', B: '2'}. */
const envOf = (s: Stage) => Object.fromEntries(all(s, 'ENV').flatMap((i) => i.args.split(' ').map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)])));

const dockerfiles = readdirSync(join(root, 'deploy/docker')).filter((f) => /Dockerfile$/.test(f));

describe('Dockerfiles', () => {
  it('has exactly one Dockerfile per deployable', () => {
    expect(dockerfiles.sort()).toEqual(NAMES.map((n) => `${n}.Dockerfile`).sort());
  });

  describe.each(NAMES)('%s.Dockerfile', (name) => {
    const stages = parseDockerfile(readFileSync(join(root, 'deploy/docker', `${name}.Dockerfile`), 'utf8'));
    const final = stages[stages.length - 1]!;
    const byName = (n: string) => stages.find((s) => s.name === n)!;

    it('builds in stages on node:24-slim, the final one unnamed', () => {
      expect(stages.length).toBeGreaterThanOrEqual(3);
      for (const s of stages) expect(s.from).toBe(NODE_IMAGE);
      expect(final.name).toBeUndefined();
    });

    it('installs production dependencies only, for its own workspaces, from manifests alone', () => {
      const source = byName('source');
      expect(one(source, 'RUN')).toBe(`node --no-warnings deploy/docker/workspaces.ts prepare ${dirOf(name)} /out`);
      const deps = byName('deps');
      expect(all(deps, 'COPY').map((c) => c.args)).toEqual(['--from=source /out/manifests/ ./', '--from=source /src/deploy/docker/workspaces.ts /opt/dap/workspaces.ts']);
      const install = one(deps, 'RUN');
      expect(install).toContain(`npm ci --omit=dev --ignore-scripts --no-audit --no-fund -w @dap/${name} `);
      expect(install).not.toMatch(/npm install/);
      expect(install).toMatch(/workspaces\.ts slim node_modules$/);
    });

    it('runs as the unprivileged node user with a health check on /healthz', () => {
      expect(one(final, 'USER')).toBe('node');
      const health = one(final, 'HEALTHCHECK');
      expect(health).toMatch(/--interval=\d+s/);
      expect(health).toMatch(/--timeout=\d+s/);
      const cmd = JSON.parse(health.slice(health.indexOf('CMD ') + 4)) as string[];
      expect(cmd[0]).toBe('node');
      expect(cmd.join(' ')).toContain("'/healthz'");
      expect(cmd.join(' ')).toContain('process.env.PORT');
      // The final stage only copies from the earlier ones; the build context never reaches it whole.
      expect(all(final, 'COPY').every((c) => c.args.startsWith('--from='))).toBe(true);
    });

    it('listens where its config says, with only env names its config schema knows', () => {
      const env = envOf(final);
      expect(env).toMatchObject({ NODE_ENV: 'production', HOST: '0.0.0.0', PORT: '8080' });
      expect(Object.keys(env).filter((k) => k !== 'NODE_ENV' && !knownEnv(name).has(k))).toEqual([]);
      expect(one(final, 'EXPOSE')).toBe(env.PORT);
      const config = loadConfig({ HOST: SHAPES[name]!.HOST!, PORT: SHAPES[name]!.PORT! }, env);
      expect(config).toEqual({ HOST: '0.0.0.0', PORT: 8080 });
    });

    it('starts its own entry point under Node with type stripping', () => {
      expect(JSON.parse(one(final, 'CMD'))).toEqual(['node', '--no-warnings', ...nodeFlagsOf(name), entryOf(name)]);
      expect(existsSync(join(root, entryOf(name)))).toBe(true);
    });
  });

  it('builds the dashboard into the gateway image where the gateway serves it from', () => {
    const stages = parseDockerfile(readFileSync(join(root, 'deploy/docker/gateway.Dockerfile'), 'utf8'));
    const dashboard = stages.find((s) => s.name === 'dashboard')!;
    expect(one(dashboard, 'RUN')).toMatch(/npm ci --ignore-scripts .*-w @dap\/gateway .*&& node_modules\/\.bin\/vite build gateway\/dashboard$/);
    const dir = (
      loadConfig(SHAPES.gateway!, {
        INTERNAL_SECRET: 'x'.repeat(32),
        REDIS_URL: 'redis://r',
        KAFKA_BROKERS: 'k:9092',
        PORT: '8080',
        ACCOUNTS_URL: 'http://a',
        SOURCES_URL: 'http://s',
        ANALYTICS_URL: 'http://a',
        MODELS_URL: 'http://m',
        WEBHOOKS_URL: 'http://w',
      }) as { DASHBOARD_DIR: string }
    ).DASHBOARD_DIR;
    const final = stages[stages.length - 1]!;
    expect(all(final, 'COPY').map((c) => c.args)).toContain(`--from=dashboard /src/${dir} ./${dir}`);
    expect(existsSync(join(root, 'gateway/dashboard/vite.config.ts'))).toBe(true);
  });

  it('keeps dependencies, local state and secrets out of the build context', () => {
    const ignored = readFileSync(join(root, '.dockerignore'), 'utf8').split('\n');
    for (const entry of ['**/node_modules', '.env', '.git', '.local', '.cache']) expect(ignored).toContain(entry);
  });
});

describe('workspace pruning (deploy/docker/workspaces.ts)', () => {
  it('gives each image only the workspaces it runs, so the gateway carries no DuckDB or onnxruntime', () => {
    const gateway = workspaceClosure(root, 'gateway');
    expect(gateway).toEqual(expect.arrayContaining(['gateway', 'libs/http', 'libs/contracts', 'libs/redis']));
    expect(gateway).not.toContain('libs/datasets');
    expect(gateway.filter((d) => d.startsWith('services/'))).toEqual([]);
    expect(workspaceClosure(root, 'services/analytics')).toContain('libs/datasets');
    for (const name of NAMES) expect(workspaceClosure(root, dirOf(name))).not.toContain('libs/testing');
  });

  /**
   * The image installs only what its workspaces declare as `dependencies`, so an import of a package that
   * nothing in the closure declares (it works in the monorepo, where every dev dependency is installed)
   * would crash the container at start-up. A package declared by another workspace of the closure is
   * installed, and hoisted where Node finds it, so that much is tolerated here.
   */
  it.each(NAMES)('%s: every package its image code imports is installed in its image', (name) => {
    const closure = workspaceClosure(root, dirOf(name));
    const builtins = new Set(builtinModules.flatMap((m) => [m, `node:${m}`]));
    const installed = new Set<string>();
    for (const dir of closure) {
      const manifest = JSON.parse(readFileSync(join(root, dir, 'package.json'), 'utf8')) as { name: string; dependencies?: Record<string, string> };
      installed.add(manifest.name);
      for (const dep of Object.keys(manifest.dependencies ?? {})) installed.add(dep);
    }
    const walk = (d: string): string[] => readdirSync(d).flatMap((f) => (statSync(join(d, f)).isDirectory() ? walk(join(d, f)) : [join(d, f)]));
    const missing: string[] = [];
    for (const dir of closure) {
      for (const file of walk(join(root, dir, 'src')).filter((f) => /\.tsx?$/.test(f) && !/\.test\.ts$/.test(f))) {
        const code = readFileSync(file, 'utf8');
        // Value imports only: `import type` and `export type` are erased before Node runs the file.
        const specs = [...code.matchAll(/^\s*(?:import|export)\s+(?!type\b)[^'"]*?from\s+'([^']+)'|import\(\s*'([^']+)'\s*\)/gm)].map((m) => m[1] ?? m[2]!);
        for (const spec of specs) {
          if (spec.startsWith('.') || builtins.has(spec) || builtins.has(spec.split('/')[0]!)) continue;
          const pkg = spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]!;
          if (!installed.has(pkg)) missing.push(`${file.slice(root.length + 1)} imports ${pkg}`);
        }
      }
    }
    expect(missing).toEqual([]);
  });

  it('gives npm ci the manifests as the lock knows them, and the image only its closure, without tests', () => {
    const out = mkdtempSync(join(tmpdir(), 'dap-prepare-'));
    try {
      const closure = prepare(root, 'services/sources', out);
      expect(readFileSync(join(out, 'manifests/package.json'), 'utf8')).toBe(readFileSync(join(root, 'package.json'), 'utf8'));
      expect(existsSync(join(out, 'manifests/package-lock.json'))).toBe(true);
      for (const dir of ['gateway', 'libs/testing', ...closure]) {
        expect(readFileSync(join(out, 'manifests', dir, 'package.json'), 'utf8')).toBe(readFileSync(join(root, dir, 'package.json'), 'utf8'));
        expect(existsSync(join(out, 'manifests', dir, 'src'))).toBe(false);
      }
      expect(existsSync(join(out, 'app/gateway'))).toBe(false);
      for (const dir of closure) expect(JSON.parse(readFileSync(join(out, 'app', dir, 'package.json'), 'utf8')).devDependencies).toBeUndefined();
      // What the deps stage runs, without installing: npm ci refuses manifests out of step with the lock.
      const dry = spawnSync('npm', ['ci', '--omit=dev', '--ignore-scripts', '--dry-run', '--no-audit', '--no-fund', '-w', '@dap/sources'], {
        cwd: join(out, 'manifests'),
        encoding: 'utf8',
        timeout: 120_000,
      });
      expect(`${dry.status} ${dry.stderr}`).toMatch(/^0 /);
      const files = (function walk(d: string): string[] {
        return readdirSync(d).flatMap((f) => (statSync(join(d, f)).isDirectory() ? walk(join(d, f)) : [join(d, f)]));
      })(join(out, 'app'));
      expect(files.some((f) => f.endsWith('services/sources/src/main.ts'))).toBe(true);
      expect(files.filter((f) => f.endsWith('.test.ts'))).toEqual([]);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });

  it("drops other platforms' onnxruntime binaries and keeps the image's own", () => {
    const nm = mkdtempSync(join(tmpdir(), 'dap-slim-'));
    try {
      const base = join(nm, 'onnxruntime-node/bin/napi-v6');
      for (const p of ['linux/x64', 'linux/arm64', 'darwin/arm64', 'win32/x64']) {
        mkdirSync(join(base, p), { recursive: true });
        writeFileSync(join(base, p, 'onnxruntime_binding.node'), '');
      }
      expect(slim(nm, 'linux', 'arm64').sort()).toEqual(['darwin/arm64', 'linux/x64', 'win32/x64'].map((p) => `onnxruntime-node/bin/napi-v6/${p}`));
      expect(readdirSync(base)).toEqual(['linux']);
      expect(readdirSync(join(base, 'linux'))).toEqual(['arm64']);
      expect(slim(join(nm, 'nothing-here'))).toEqual([]);
    } finally {
      rmSync(nm, { recursive: true, force: true });
    }
  });
});
