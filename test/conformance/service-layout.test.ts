import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { repoRoot } from '@dap/testing';

/**
 * Every service's `src/` has the one layout of docs/architecture.md ("Where things are"), so whoever has read one
 * service knows where everything is in the others:
 * - files: `index.ts` (composition root), `app.ts`, `config.ts`, `main.ts` (the process); besides them only
 *   their tests and an operator command (`cli.ts`);
 * - folders: `http/` (routes and `dto.ts`), `domain/` (with `errors.ts` and `events.ts`), `persistence/`,
 *   `events/` (the Kafka edge: its consumers, and `outbox.ts`, what its relay publishes), and `workers/` exactly
 *   where something runs in the background (a timer, a poll loop, a worker thread);
 * - no empty folder, and no folder the composition root does not use.
 */
const root = repoRoot();
const servicesDir = join(root, 'services');
const services = readdirSync(servicesDir).filter((s) => existsSync(join(servicesDir, s, 'src', 'index.ts')));

const FOLDERS = ['domain', 'events', 'http', 'persistence'];
const FILES = ['app.ts', 'config.ts', 'index.ts', 'main.ts'];
const OPTIONAL_FILES = ['cli.ts'];
const REQUIRED = ['domain/errors.ts', 'domain/events.ts', 'http/dto.ts', 'events/outbox.ts'];
/** What starts work that runs outside a request: an interval, a periodic task, a worker thread, a self-re-arming poll. */
const BACKGROUND = /\bsetInterval\(|\.runEvery\(|['"]node:worker_threads['"]|\bsetTimeout\(\s*tick\b/;

const isTest = (f: string) => f.endsWith('.test.ts');

/** The non-test modules below a folder, recursively. */
function modulesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((e) => {
    const path = join(dir, e);
    if (statSync(path).isDirectory()) return modulesUnder(path);
    return e.endsWith('.ts') && !isTest(e) ? [path] : [];
  });
}

/** The modules of a service's src/ that start background work. */
function backgroundModules(src: string): string[] {
  return modulesUnder(src)
    .filter((f) => BACKGROUND.test(readFileSync(f, 'utf8')))
    .map((f) => relative(src, f));
}

/** What breaks the layout in one service's src/ (empty when it conforms). */
function layoutProblems(service: string): string[] {
  const src = join(servicesDir, service, 'src');
  const entries = readdirSync(src);
  const dirs = entries.filter((e) => statSync(join(src, e)).isDirectory());
  const files = entries.filter((e) => !dirs.includes(e));
  const problems: string[] = [];
  const background = backgroundModules(src);
  const folders = background.length > 0 ? [...FOLDERS, 'workers'] : FOLDERS;

  for (const f of folders) if (!dirs.includes(f)) problems.push(`${f}/ is missing`);
  for (const d of dirs) {
    if (d === 'workers' && !background.length) problems.push('workers/ exists but nothing in src/ runs in the background');
    else if (!folders.includes(d)) problems.push(`${d}/ is not a folder of the layout`);
    if (!modulesUnder(join(src, d)).length) problems.push(`${d}/ holds no module`);
  }
  for (const f of FILES) if (!files.includes(f)) problems.push(`${f} is missing`);
  for (const f of files) {
    const testOf = f.replace(/\.test\.ts$/, '.ts');
    if (!FILES.includes(f) && !OPTIONAL_FILES.includes(f) && !(isTest(f) && files.includes(testOf))) problems.push(`${f} is not a top-level file of the layout`);
  }
  for (const f of REQUIRED) if (!existsSync(join(src, f))) problems.push(`${f} is missing`);
  if (dirs.includes('http') && !readdirSync(join(src, 'http')).some((f) => f.endsWith('.routes.ts'))) problems.push('http/ has no *.routes.ts');

  const index = existsSync(join(src, 'index.ts')) ? readFileSync(join(src, 'index.ts'), 'utf8') : '';
  // Background work is wired from workers/, not written inline in the composition root.
  if (/\bsetInterval\(|\bsetTimeout\(/.test(index)) problems.push('index.ts starts a timer itself (background work belongs in workers/)');
  for (const d of dirs) if (d !== 'http' && d !== 'domain' && !index.includes(`'./${d}/`)) problems.push(`index.ts uses nothing from ${d}/`);
  if (!index.includes("'./events/outbox.ts'")) problems.push('index.ts does not build its relay from events/outbox.ts');
  return problems;
}

describe('every service has the same layout', () => {
  it('finds the five services', () => {
    expect(services.sort()).toEqual(['accounts', 'analytics', 'models', 'sources', 'webhooks']);
  });

  it.each(services)('%s/src follows it', (service) => {
    expect(layoutProblems(service)).toEqual([]);
  });

  it('sees background work where it runs (a positive control for the services without workers/)', () => {
    const found = (s: string) => backgroundModules(join(servicesDir, s, 'src'));
    expect(found('sources')).toEqual(expect.arrayContaining([join('workers', 'retired-files.ts'), join('workers', 'sync', 'source-syncer.ts')]));
    expect(found('analytics')).toContain(join('workers', 'stale-reports.ts'));
    expect(found('webhooks')).toContain(join('workers', 'dispatcher.ts'));
    expect(found('models')).toContain(join('workers', 'worker-pool.ts'));
    expect(found('accounts')).toEqual([]);
  });
});
