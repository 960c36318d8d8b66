import { isId, newId, type CallerContext, type CreateModelBody, type ModelVersionDto, type RetrainModelBody, type UpdateAliasesBody, type UploadOnnxBody } from '@dap/contracts';
import type { Logger } from '@dap/logger';
import type { ArtifactRepository } from '../persistence/artifact.repository.ts';
import { recordOf, type ModelDoc, type ModelRepository } from '../persistence/model.repository.ts';
import type { ModelCatalog } from './catalog.ts';
import { builtinNotDeletable, builtinNotVersioned, invalidBody, modelNotFound } from './errors.ts';
import { modelReady } from './events.ts';
import { DEFAULT_ALIASES, type ModelRecord } from './model.ts';
import { checkDeclaredIo, featuresOf, onnxInfoOf } from './onnx/onnx-upload.ts';
import { OnnxModelError } from './onnx/onnx-host.ts';
import type { OnnxHost } from './onnx/onnx-runtime.ts';
import type { OwnModelRuntimes } from './runtimes.ts';
import type { TrainingService } from './training.service.ts';
import type { ModelVersions } from './versions.service.ts';

export interface ModelLifecycleDeps {
  catalog: ModelCatalog;
  models: ModelRepository;
  artifacts: ArtifactRepository;
  versions: ModelVersions;
  training: TrainingService;
  onnx: OnnxHost;
  runtimes: OwnModelRuntimes;
  logger: Logger;
}

/** Creating and deleting an account's own models: training jobs, ONNX uploads, and their removal. */
export class ModelLifecycle {
  private readonly deps: ModelLifecycleDeps;

  constructor(deps: ModelLifecycleDeps) {
    this.deps = deps;
  }

  /** A training job (202: the model is training) or an ONNX upload (201: the model is ready). */
  async create(caller: CallerContext, body: CreateModelBody): Promise<{ model: ModelRecord; accepted: boolean }> {
    if (body.type === 'onnx') return { model: await this.uploadOnnx(caller, body), accepted: false };
    return { model: await this.deps.training.create(caller, body), accepted: true };
  }

  /**
   * Verifies the file by loading it with onnxruntime and comparing its inputs and outputs with the
   * declaration, stores the file, then the model (ready, with `model.ready`).
   */
  private async uploadOnnx(caller: CallerContext, body: UploadOnnxBody): Promise<ModelRecord> {
    const bytes = Buffer.from(body.model, 'base64');
    let inspection;
    try {
      inspection = await this.deps.onnx.inspect(bytes);
    } catch (err) {
      if (!(err instanceof OnnxModelError)) throw err;
      throw invalidBody([{ path: 'model', message: `onnxruntime could not load the model: ${err.message.slice(0, 500)}` }]);
    }
    const mismatches = checkDeclaredIo(body, inspection);
    if (mismatches.length) throw invalidBody(mismatches);

    const now = new Date();
    const id = newId('mdl');
    const onnx = onnxInfoOf(body, bytes);
    // The file first: a crash before the model write leaves an orphan file, never a model without one.
    await this.deps.artifacts.put(caller.accountId, id, { version: 1, format: 'onnx', data: bytes, summary: null });
    const doc: Omit<ModelDoc, 'accountId'> = {
      _id: id,
      name: body.name,
      type: 'onnx',
      kind: 'onnx',
      status: 'ready',
      version: 1,
      description:
        body.description ??
        `An uploaded ONNX model (${onnx.sizeBytes} bytes) run with onnxruntime. Each input maps ${body.inputs.map((i) => i.name).join(', ')} ` +
          `to nested arrays; each prediction maps ${body.outputs.map((o) => o.name).join(', ')} to nested arrays.`,
      features: featuresOf(body.inputs),
      createdAt: now,
      updatedAt: now,
      onnx,
      evaluation: null,
      requestId: caller.requestId,
      aliases: { ...DEFAULT_ALIASES },
    };
    await this.deps.models.insert(caller.accountId, doc, [modelReady(caller.accountId, caller.requestId, { id, name: body.name, type: 'onnx' })]);
    this.deps.logger.info({ modelId: id, sizeBytes: onnx.sizeBytes }, 'ONNX model uploaded');
    return recordOf({ ...doc, accountId: caller.accountId });
  }

  /** Built-ins cannot go (409); another account's or an unknown id is a 404. A training job is stopped. */
  async delete(accountId: string, id: string): Promise<void> {
    if (this.deps.catalog.isBuiltin(id)) throw builtinNotDeletable();
    if (!isId('mdl', id)) throw modelNotFound();
    if (!(await this.deps.models.softDelete(accountId, id))) throw modelNotFound();
    this.deps.training.cancel(id);
    this.deps.runtimes.evict(accountId, id);
    await this.deps.artifacts.remove(accountId, id);
    await this.deps.versions.removeAll(accountId, id);
  }

  /** Version n+1 of a trained model (202: it trains while the aliases serve the versions they point at). */
  retrain(caller: CallerContext, id: string, body: RetrainModelBody): Promise<ModelRecord> {
    if (this.deps.catalog.isBuiltin(id)) throw builtinNotVersioned();
    if (!isId('mdl', id)) throw modelNotFound();
    return this.deps.training.retrain(caller, id, body);
  }

  async listVersions(accountId: string, id: string): Promise<ModelVersionDto[]> {
    if (!isId('mdl', id)) throw modelNotFound();
    const model = await this.deps.catalog.get(accountId, id);
    if (!model) throw modelNotFound();
    return this.deps.versions.list(accountId, model);
  }

  setAliases(accountId: string, id: string, body: UpdateAliasesBody): Promise<{ aliases: Record<string, number>; shadowShare: number }> {
    if (!isId('mdl', id)) throw modelNotFound();
    return this.deps.versions.setAliases(accountId, id, this.deps.catalog.isBuiltin(id), body);
  }

  /** A ready trained model's parameters for GET /models/{id}; null otherwise. */
  async parameters(accountId: string, model: ModelRecord): Promise<Record<string, unknown> | null> {
    if (model.kind !== 'trained' || model.status !== 'ready') return null;
    return this.deps.artifacts.summary(accountId, model.id, model.version);
  }
}
