import { mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import ts from 'typescript';
import { parseYamlDocuments, renderKustomization, type K8sObject } from './render.ts';

/**
 * Validates Kubernetes objects offline, with no cluster and no network, against the Kubernetes API
 * schemas bundled in the npm package `kubernetes-models`, in two passes:
 *  1. its JSON-schema validators (ajv): types, enums, formats and required fields of every object;
 *  2. its TypeScript interfaces: each object becomes an object literal typed `I<Kind>`, so the compiler
 *     reports every field the API does not define (a typo such as `readinesProbe`, which the API server
 *     would drop silently) and every value of the wrong type.
 * An apiVersion/kind the package does not know is an error too.
 *
 *   node deploy/k8s/validate.ts deploy/k8s/base deploy/k8s/overlays/example [more.yaml]
 *
 * Prints one JSON line {"objects": n, "errors": [...]} and exits 1 when there are errors. It runs as its
 * own Node process because kubernetes-models is ES-module only (test/deploy/k8s.test.ts calls it so).
 */

interface ModelClass {
  new (data: unknown): { validate(): void };
}

const API_VERSION = /^(?:[a-z0-9.-]+\/)?v\d+(?:(?:alpha|beta)\d+)?$/;

function modulePathOf(obj: K8sObject): string {
  if (!API_VERSION.test(obj.apiVersion ?? '') || !/^[A-Z]\w*$/.test(obj.kind ?? '')) throw new Error(`malformed apiVersion/kind: ${obj.apiVersion} ${obj.kind}`);
  return `kubernetes-models/${obj.apiVersion}/${obj.kind}`;
}

async function schemaErrors(obj: K8sObject): Promise<string[]> {
  const spec = modulePathOf(obj);
  let Model: ModelClass | undefined;
  try {
    Model = ((await import(spec)) as Record<string, ModelClass>)[obj.kind];
  } catch {
    Model = undefined;
  }
  if (!Model) return [`${obj.apiVersion} ${obj.kind} is not a Kubernetes API kind`];
  try {
    new Model(obj).validate();
    return [];
  } catch (err) {
    return [(err as Error).message];
  }
}

/** Type-checks every object as a literal of its kind's interface; returns the compiler's complaints per object. */
function typeErrors(objects: K8sObject[], workDir: string): Map<number, string[]> {
  mkdirSync(workDir, { recursive: true });
  const file = join(workDir, 'manifests.ts');
  // The imports first (line i names object i's kind), then one typed literal per object.
  const text = objects.map((obj, i) => `import type { I${obj.kind} as T${i} } from '${modulePathOf(obj)}';`).join('\n') + '\n';
  const bodies: string[] = [];
  const firstLine: number[] = [];
  let line = objects.length;
  objects.forEach((obj, i) => {
    const body = `export const o${i}: T${i} = ${JSON.stringify(obj, null, 1)};\n`;
    firstLine.push(line);
    line += body.split('\n').length - 1;
    bodies.push(body);
  });
  writeFileSync(file, text + bodies.join(''));
  const program = ts.createProgram([file], {
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    types: [],
  });
  const byObject = new Map<number, string[]>();
  for (const d of ts.getPreEmitDiagnostics(program)) {
    const message = ts.flattenDiagnosticMessageText(d.messageText, ' ');
    let index = -1;
    if (d.file && d.start !== undefined && resolve(d.file.fileName) === resolve(file)) {
      const at = d.file.getLineAndCharacterOfPosition(d.start).line;
      for (let i = firstLine.length - 1; i >= 0; i--)
        if (at >= firstLine[i]!) {
          index = i;
          break;
        }
      if (at < objects.length) index = at; // an import line: the kind is unknown
    }
    byObject.set(index, [...(byObject.get(index) ?? []), message]);
  }
  rmSync(workDir, { recursive: true, force: true });
  return byObject;
}

export async function validateObjects(objects: K8sObject[], workDir: string): Promise<string[]> {
  const errors: string[] = [];
  const named = (o: K8sObject | undefined) => (o ? `${o.kind ?? '?'} ${o.metadata?.name ?? '?'}` : '(manifests)');
  const typed: K8sObject[] = [];
  for (const obj of objects) {
    try {
      const found = await schemaErrors(obj);
      errors.push(...found.map((e) => `${named(obj)}: ${e}`));
      if (!found.some((e) => e.includes('not a Kubernetes API kind'))) typed.push(obj);
    } catch (err) {
      errors.push(`${named(obj)}: ${(err as Error).message}`);
    }
  }
  for (const [i, messages] of typeErrors(typed, workDir)) errors.push(...messages.map((m) => `${named(typed[i])}: ${m}`));
  return errors;
}

function objectsOf(arg: string): K8sObject[] {
  if (statSync(arg).isDirectory()) return renderKustomization(arg);
  return parseYamlDocuments(readFileSync(arg, 'utf8'), arg) as K8sObject[];
}

if (/validate\.ts$/.test(process.argv[1] ?? '')) {
  const args = process.argv.slice(2);
  if (!args.length) {
    process.stderr.write('usage: node deploy/k8s/validate.ts <kustomization-dir | file.yaml>...\n');
    process.exit(2);
  }
  const objects: K8sObject[] = [];
  const errors: string[] = [];
  for (const arg of args) {
    try {
      objects.push(...objectsOf(arg));
    } catch (err) {
      errors.push(`${arg}: ${(err as Error).message}`);
    }
  }
  // Written inside the repository, so the generated file resolves kubernetes-models from node_modules.
  errors.push(...(await validateObjects(objects, join(process.cwd(), '.cache', 'k8s-validate', String(process.pid)))));
  process.stdout.write(`${JSON.stringify({ objects: objects.length, errors })}\n`);
  process.exit(errors.length ? 1 : 0);
}
