import { gunzip } from 'node:zlib';
import { promisify } from 'node:util';
import type { ArtifactRepository } from '../persistence/artifact.repository.ts';
import type { RuntimeFactory } from './catalog.ts';
import type { ModelRecord } from './model.ts';
import { onnxRuntime, type OnnxHost } from './onnx/onnx-runtime.ts';
import type { ModelRuntime } from './runtime.ts';
import type { TrainedArtifact } from './training/trained-model.ts';
import { trainedRuntime } from './trained-runtime.ts';

const gunzipAsync = promisify(gunzip);

/**
 * Runtimes of the accounts' own models, built from their stored artifacts on first use and kept (least
 * recently used out) so the predict path reads the artifact once per process, not per request. Keyed by
 * account, model id and version: a new version is a new entry, and one account never gets a runtime built
 * for another.
 */
export class OwnModelRuntimes implements RuntimeFactory {
  private readonly artifacts: ArtifactRepository;
  private readonly onnx: OnnxHost;
  private readonly maxEntries: number;
  private readonly cache = new Map<string, Promise<ModelRuntime | null>>();

  constructor(opts: { artifacts: ArtifactRepository; onnx: OnnxHost; maxEntries: number }) {
    this.artifacts = opts.artifacts;
    this.onnx = opts.onnx;
    this.maxEntries = opts.maxEntries;
  }

  runtimeFor(accountId: string, model: ModelRecord): Promise<ModelRuntime | null> {
    if (!accountId) throw new Error('accountId is required');
    const key = `${accountId}/${model.id}@${model.version}`;
    const hit = this.cache.get(key);
    if (hit) {
      this.cache.delete(key);
      this.cache.set(key, hit);
      return hit;
    }
    const built = this.build(accountId, model, key);
    built.then(
      (r) => r ?? this.cache.delete(key),
      () => this.cache.delete(key),
    );
    this.cache.set(key, built);
    while (this.cache.size > this.maxEntries) this.cache.delete(this.cache.keys().next().value!);
    return built;
  }

  evict(accountId: string, modelId: string): void {
    const prefix = `${accountId}/${modelId}@`;
    for (const key of [...this.cache.keys()]) if (key.startsWith(prefix)) this.cache.delete(key);
  }

  private async build(accountId: string, model: ModelRecord, key: string): Promise<ModelRuntime | null> {
    if (model.kind === 'onnx' && model.onnx) {
      const load = async () => {
        const stored = await this.artifacts.data(accountId, model.id, model.version);
        if (!stored) throw new Error(`the ONNX file of ${model.id} is missing`);
        return stored.data;
      };
      return onnxRuntime(model.onnx, key, this.onnx, load);
    }
    if (model.kind === 'trained') {
      const stored = await this.artifacts.data(accountId, model.id, model.version);
      if (!stored || stored.format !== 'trained-json-gzip') return null;
      const artifact = JSON.parse((await gunzipAsync(stored.data)).toString('utf8')) as TrainedArtifact;
      return trainedRuntime(model, artifact);
    }
    return null;
  }
}
