import { readdirSync, readFileSync, statSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { repoRoot } from '@dap/testing';

/**
 * Every workspace declares what it imports. npm hoists every package to the root `node_modules`, so an
 * undeclared import resolves here and breaks only where the workspace is installed on its own (an image that
 * installs one service's dependencies, a published library). Code that ships (a workspace's `src/`, tests
 * aside) must name the package in `dependencies`; its tests, benches and scripts may also use the root's
 * `devDependencies` (the one test toolchain). The root's own folders (`test/`, `deploy/`) use the root's.
 */
const root = repoRoot();

interface Manifest {
  name: string;
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
  workspaces?: string[];
}

const readManifest = (dir: string): Manifest => JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as Manifest;
const rootManifest = readManifest(root);
const workspaceDirs = (rootManifest.workspaces ?? []).flatMap((pattern) =>
  pattern.endsWith('/*') ? readdirSync(join(root, pattern.slice(0, -2))).map((d) => join(pattern.slice(0, -2), d)) : [pattern],
);

const SOURCE = /\.(ts|tsx|mts|js|mjs)$/;
const SKIP_DIRS = new Set(['node_modules', 'dist', '.cache', '.local', 'coverage']);

function* files(dir: string): Generator<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.isDirectory()) {
      if (!SKIP_DIRS.has(entry.name)) yield* files(join(dir, entry.name));
    } else if (SOURCE.test(entry.name) && !entry.name.endsWith('.d.ts')) {
      yield join(dir, entry.name);
    }
  }
}

/** Module specifiers of static and dynamic imports, re-exports and requires (type-only imports included). */
// TypeScript's own scanner: it skips comments and strings (a README snippet in a string is not an import).
// A `declare module 'x'` augmentation names a module whose types it extends; it imports nothing.
function importedSpecifiers(code: string): string[] {
  const augmented = new Set([...code.matchAll(/declare\s+module\s+['"]([^'"]+)['"]/g)].map((m) => m[1]!));
  return ts
    .preProcessFile(code, true, true)
    .importedFiles.map((f) => f.fileName)
    .filter((f) => !augmented.has(f));
}

/** The package a bare specifier names (`@scope/name/sub` → `@scope/name`), or null for relative and built-in modules. */
export function packageOf(specifier: string): string | null {
  if (specifier.startsWith('.') || specifier.startsWith('/') || specifier.startsWith('node:')) return null;
  const parts = specifier.split('/');
  const name = specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!;
  return builtinModules.includes(name) ? null : name;
}

export function importsOf(text: string): string[] {
  const found = new Set<string>();
  // Comments may quote an import as an example; they do not count.
  const code = text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`])\/\/.*$/gm, '$1');
  for (const specifier of importedSpecifiers(code)) {
    if (specifier.includes('${')) continue; // code generated inside a template string
    const name = packageOf(specifier);
    if (name) found.add(name);
  }
  return [...found];
}

/** Files that run in development only: tests, benches, scripts, and the dashboard (bundled at build time into static files). */
const isTooling = (file: string) => /\.test\.tsx?$/.test(file) || /\/(test|bench|scripts)\//.test(file) || file.includes('/gateway/dashboard/');
/** This check quotes import lines as data for its own positive control. */
const SELF = relative(root, __filename);

function undeclared(dir: string, manifest: Manifest, extraForTooling: Set<string>, allTooling = false): string[] {
  const shipped = new Set([manifest.name, ...Object.keys(manifest.dependencies ?? {})]);
  const tooling = new Set([...shipped, ...Object.keys(manifest.devDependencies ?? {}), ...extraForTooling]);
  const problems: string[] = [];
  for (const file of files(join(root, dir))) {
    if (relative(root, file) === SELF) continue;
    const forTooling = allTooling || isTooling(file);
    const allowed = forTooling ? tooling : shipped;
    for (const pkg of importsOf(readFileSync(file, 'utf8'))) {
      if (!allowed.has(pkg)) problems.push(`${relative(root, file)} imports ${pkg}, which ${manifest.name} does not declare${forTooling ? '' : ' in dependencies'}`);
    }
  }
  return problems;
}

const rootTooling = new Set([...Object.keys(rootManifest.devDependencies ?? {})]);

describe('declared dependencies', () => {
  it.each(workspaceDirs.filter((d) => statSync(join(root, d)).isDirectory()))('%s imports only what it declares', (dir) => {
    expect(undeclared(dir, readManifest(join(root, dir)), rootTooling)).toEqual([]);
  });

  it("the root's test/ and deploy/ import only the root's devDependencies and the workspaces", () => {
    const workspaces = new Set(workspaceDirs.map((d) => readManifest(join(root, d)).name));
    const manifest: Manifest = { name: rootManifest.name, dependencies: {}, devDependencies: rootManifest.devDependencies ?? {} };
    const everything = new Set([...workspaces]);
    expect([...undeclared('test', manifest, everything, true), ...undeclared('deploy', manifest, everything, true)]).toEqual([]);
  });

  it('finds the imports a file makes (a positive control for the scan)', () => {
    const text = [
      "import express, { type Request } from 'express';",
      "import type { Redis } from 'ioredis';",
      "export { z } from 'zod';",
      "import '@scope/side-effect/register';",
      "const m = await import('pg');",
      "const legacy = require('mysql2/promise');",
      "import { join } from 'node:path';",
      "import { x } from './local.ts';",
      "// import { nope } from 'commented-out';",
      "import { readFile } from 'fs/promises';",
      'const doc = "import { verifyWebhook } from \'@dap/sdk/webhooks\'";',
    ].join('\n');
    expect(importsOf(text).sort()).toEqual(['@scope/side-effect', 'express', 'ioredis', 'mysql2', 'pg', 'zod']);
  });
});
