import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments, stringify } from 'yaml';

/**
 * A small, offline stand-in for `kustomize build`, enough for deploy/k8s: `resources` (files and nested
 * kustomizations), `namespace`, `images` and `patches` given as strategic-merge patch files. The tests
 * render with it on every machine; where Go is available they also check it against the real kustomize
 * (deploy/k8s/kustomize.sh), so a feature used here but not implemented cannot pass unnoticed.
 *
 *   node deploy/k8s/render.ts deploy/k8s/overlays/example    # prints the rendered YAML
 */

export type K8sObject = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; [k: string]: unknown };
  [k: string]: unknown;
};

interface Kustomization {
  namespace?: string;
  resources?: string[];
  images?: Array<{ name: string; newName?: string; newTag?: string }>;
  patches?: Array<{ path?: string; patch?: string }>;
  [k: string]: unknown;
}

const SUPPORTED = new Set(['apiVersion', 'kind', 'namespace', 'resources', 'images', 'patches']);
/** Kinds that are not namespaced, among those this project uses. */
const CLUSTER_SCOPED = new Set(['Namespace', 'ClusterRole', 'ClusterRoleBinding', 'PersistentVolume', 'StorageClass', 'CustomResourceDefinition']);

export function parseYamlDocuments(text: string, source: string): unknown[] {
  return parseAllDocuments(text).flatMap((doc) => {
    if (doc.errors.length) throw new Error(`${source}: ${doc.errors.map((e) => e.message).join('; ')}`);
    const value: unknown = doc.toJS();
    return value === null || value === undefined ? [] : [value];
  });
}

function readObjects(file: string): K8sObject[] {
  return parseYamlDocuments(readFileSync(file, 'utf8'), file).map((o) => {
    const obj = o as K8sObject;
    if (!obj.apiVersion || !obj.kind || !obj.metadata?.name) throw new Error(`${file}: every object needs apiVersion, kind and metadata.name`);
    return obj;
  });
}

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Strategic merge as kustomize applies it to the fields used here: maps merge key by key; lists of
 * objects that all carry `name` (containers, env, volumes, ports) merge element by element on it; any
 * other list is replaced; a null deletes the key.
 */
export function strategicMerge(target: unknown, patch: unknown): unknown {
  if (isPlainObject(target) && isPlainObject(patch)) {
    const out: Record<string, unknown> = { ...target };
    for (const [k, v] of Object.entries(patch)) out[k] = v === null ? undefined : k in out ? strategicMerge(out[k], v) : v;
    for (const k of Object.keys(out)) if (out[k] === undefined) delete out[k];
    return out;
  }
  const named = (l: unknown): l is Array<Record<string, unknown> & { name: string }> => Array.isArray(l) && l.every((e) => isPlainObject(e) && typeof e.name === 'string');
  if (named(target) && named(patch)) {
    // kustomize puts the patch's elements first, in the patch's order, then the untouched ones.
    const patched = patch.map((p) => {
      const original = target.find((e) => e.name === p.name);
      return original ? (strategicMerge(original, p) as (typeof patch)[number]) : p;
    });
    return [...patched, ...target.filter((e) => !patch.some((p) => p.name === e.name))];
  }
  return patch;
}

function setImages(obj: unknown, images: NonNullable<Kustomization['images']>): void {
  if (Array.isArray(obj)) return obj.forEach((o) => setImages(o, images));
  if (!isPlainObject(obj)) return;
  for (const key of ['containers', 'initContainers']) {
    const list = obj[key];
    if (!Array.isArray(list)) continue;
    for (const c of list as Array<{ image?: string }>) {
      if (!c.image) continue;
      const at = c.image.lastIndexOf(':');
      const hasTag = at > c.image.lastIndexOf('/');
      const name = hasTag ? c.image.slice(0, at) : c.image;
      const rule = images.find((i) => i.name === name);
      if (rule) c.image = `${rule.newName ?? name}:${rule.newTag ?? (hasTag ? c.image.slice(at + 1) : 'latest')}`;
    }
  }
  for (const v of Object.values(obj)) setImages(v, images);
}

export function renderKustomization(dir: string): K8sObject[] {
  const k = parseYamlDocuments(readFileSync(join(dir, 'kustomization.yaml'), 'utf8'), dir)[0] as Kustomization;
  const unsupported = Object.keys(k).filter((key) => !SUPPORTED.has(key));
  if (unsupported.length) throw new Error(`${dir}/kustomization.yaml uses ${unsupported.join(', ')}, which render.ts does not implement`);

  let objects: K8sObject[] = [];
  for (const r of k.resources ?? []) {
    const path = join(dir, r);
    objects.push(...(statSync(path).isDirectory() ? renderKustomization(path) : readObjects(path)));
  }
  for (const p of k.patches ?? []) {
    if (!p.path) throw new Error(`${dir}: only file patches (path:) are implemented`);
    for (const patch of readObjects(join(dir, p.path))) {
      const i = objects.findIndex((o) => o.kind === patch.kind && o.metadata.name === patch.metadata.name);
      if (i < 0) throw new Error(`${dir}/${p.path}: no ${patch.kind} ${patch.metadata.name} to patch`);
      objects[i] = strategicMerge(objects[i], patch) as K8sObject;
    }
  }
  if (k.images) setImages(objects, k.images);
  if (k.namespace) {
    objects = objects.map((o) => (CLUSTER_SCOPED.has(o.kind) ? o : { ...o, metadata: { ...o.metadata, namespace: k.namespace } }));
  }
  const seen = new Set<string>();
  for (const o of objects) {
    const id = `${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`;
    if (seen.has(id)) throw new Error(`${dir}: ${id} is defined twice`);
    seen.add(id);
  }
  return objects;
}

if (/render\.ts$/.test(process.argv[1] ?? '')) {
  const dir = process.argv[2];
  if (!dir) {
    process.stderr.write('usage: node deploy/k8s/render.ts <kustomization-dir>\n');
    process.exit(2);
  }
  process.stdout.write(
    renderKustomization(dir)
      .map((o) => stringify(o))
      .join('---\n'),
  );
}
