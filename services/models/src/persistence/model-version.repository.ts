import type { Collection, Db, Document } from 'mongodb';
import type { Logger } from '@dap/logger';
import type { ModelStatus, ModelFeature, OnnxInfo, TrainingInfo } from '../domain/model.ts';
import type { FeatureProfile } from '../domain/training/drift.ts';
import type { ModelDoc } from './model.repository.ts';

/**
 * A model's earlier versions. The model document always holds its latest version (which the training
 * lease machinery works on); retraining copies that version here before the model document moves on to
 * the next one, so every version but the latest lives here, one document each.
 */
export interface ModelVersionDoc {
  _id: string;
  accountId: string;
  modelId: string;
  version: number;
  status: ModelStatus;
  error: string | null;
  features: ModelFeature[];
  training: TrainingInfo | null;
  onnx: OnnxInfo | null;
  evaluation: Record<string, unknown> | null;
  profile: FeatureProfile[] | null;
  createdAt: Date;
}

export const MODEL_VERSIONS_COLLECTION = 'model_versions';

export class ModelVersionRepository {
  private readonly coll: Collection<Document>;

  constructor(db: Db) {
    this.coll = db.collection(MODEL_VERSIONS_COLLECTION);
  }

  async ensureIndexes(logger: Logger): Promise<void> {
    try {
      await this.coll.createIndex({ accountId: 1, modelId: 1, version: -1 }, { name: 'account_model_version' });
    } catch (err) {
      logger.warn({ err }, 'could not create the model_versions index; continuing without it');
    }
  }

  /** Copies the model's latest version; repeating it (a retry after a crash) writes the same document. */
  async snapshot(doc: ModelDoc): Promise<void> {
    if (!doc.accountId) throw new Error('accountId is required');
    const version: Omit<ModelVersionDoc, '_id'> = {
      accountId: doc.accountId,
      modelId: doc._id,
      version: doc.version,
      status: doc.status,
      error: doc.error ?? null,
      features: doc.features,
      training: doc.training ?? null,
      onnx: doc.onnx ?? null,
      evaluation: doc.evaluation ?? null,
      profile: doc.profile ?? null,
      createdAt: doc.training?.startedAt ?? doc.createdAt,
    };
    await this.coll.replaceOne({ _id: `${doc._id}@${doc.version}` as never }, version, { upsert: true });
  }

  async find(accountId: string, modelId: string, version: number): Promise<ModelVersionDoc | null> {
    if (!accountId) throw new Error('accountId is required');
    return (await this.coll.findOne({ _id: `${modelId}@${version}` as never, accountId, modelId })) as ModelVersionDoc | null;
  }

  /** Newest first, without the drift profiles. */
  async list(accountId: string, modelId: string, limit: number): Promise<Omit<ModelVersionDoc, 'profile'>[]> {
    if (!accountId) throw new Error('accountId is required');
    return (await this.coll
      .find({ accountId, modelId }, { projection: { profile: 0 } })
      .sort({ version: -1 })
      .limit(limit)
      .toArray()) as unknown as Omit<ModelVersionDoc, 'profile'>[];
  }

  async removeAll(accountId: string, modelId: string): Promise<void> {
    if (!accountId) throw new Error('accountId is required');
    await this.coll.deleteMany({ accountId, modelId });
  }
}
