import type { TenantCollection, TenantDoc } from '@dap/mongo';
import type { ModelRecord } from '../domain/model.ts';

/**
 * An account's own models (trained from a source, or uploaded ONNX). Nothing creates them yet; the catalog
 * already lists and resolves them so training and ONNX only add writers and runtimes.
 */
export interface ModelDoc extends TenantDoc, Omit<ModelRecord, 'id'> {
  _id: string;
  updatedAt: Date;
}

export const MODELS_COLLECTION = 'models';

export function recordOf(doc: ModelDoc): ModelRecord {
  return {
    id: doc._id,
    name: doc.name,
    type: doc.type,
    kind: doc.kind,
    status: doc.status,
    version: doc.version,
    description: doc.description,
    features: doc.features,
    createdAt: doc.createdAt,
  };
}

export class ModelRepository {
  private readonly coll: TenantCollection<ModelDoc>;

  constructor(coll: TenantCollection<ModelDoc>) {
    this.coll = coll;
  }

  async findById(accountId: string, id: string): Promise<ModelRecord | null> {
    const doc = await this.coll.findById(accountId, id);
    return doc ? recordOf(doc) : null;
  }

  /** Newest first, ids below `before`. */
  async list(accountId: string, opts: { limit: number; before?: string }): Promise<ModelRecord[]> {
    return (await this.coll.list(accountId, opts)).map(recordOf);
  }
}
