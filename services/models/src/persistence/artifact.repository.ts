import { Binary, type Collection, type Db, type Document } from 'mongodb';

/**
 * A model's bytes: a trained model's parameters (gzipped JSON) or an uploaded ONNX file. One document per
 * model, apart from the model document, so listing and resolving models never reads them. A binary field
 * (not GridFS): the files are capped well below MongoDB's 16 MiB document limit, and one document is one
 * atomic write that mongo-java-server handles like MongoDB.
 */
export type ArtifactFormat = 'trained-json-gzip' | 'onnx';

export interface ArtifactDoc {
  /** The model id for version 1 (as before versions existed), `<modelId>@<version>` for later ones. */
  _id: string;
  accountId: string;
  modelId?: string;
  version: number;
  format: ArtifactFormat;
  data: Binary;
  sizeBytes: number;
  /**
   * What the API shows of a trained model's parameters, as JSON text: its keys are column names and
   * category values, which MongoDB field names could not all hold (dots, a leading $).
   */
  summaryJson: string | null;
  createdAt: Date;
}

export const ARTIFACTS_COLLECTION = 'model_artifacts';
/** Stays under MongoDB's 16 MiB document limit with room for the other fields. */
export const MAX_ARTIFACT_BYTES = 15 * 1024 * 1024;

/** Version 1 keeps the key it had before models had versions, so existing artifacts need no migration. */
const keyOf = (modelId: string, version: number) => (version === 1 ? modelId : `${modelId}@${version}`);

export class ArtifactRepository {
  private readonly coll: Collection<Document>;

  constructor(db: Db) {
    this.coll = db.collection(ARTIFACTS_COLLECTION);
  }

  async put(accountId: string, modelId: string, artifact: { version: number; format: ArtifactFormat; data: Uint8Array; summary: Record<string, unknown> | null }): Promise<void> {
    if (!accountId) throw new Error('accountId is required');
    if (artifact.data.byteLength > MAX_ARTIFACT_BYTES) throw new Error(`the model is ${artifact.data.byteLength} bytes; at most ${MAX_ARTIFACT_BYTES} can be stored`);
    const doc = {
      accountId,
      modelId,
      version: artifact.version,
      format: artifact.format,
      data: new Binary(artifact.data),
      sizeBytes: artifact.data.byteLength,
      summaryJson: artifact.summary === null ? null : JSON.stringify(artifact.summary),
      createdAt: new Date(),
    };
    await this.coll.replaceOne({ _id: keyOf(modelId, artifact.version) as never }, doc, { upsert: true });
  }

  async data(accountId: string, modelId: string, version: number): Promise<{ version: number; format: ArtifactFormat; data: Buffer } | null> {
    if (!accountId) throw new Error('accountId is required');
    const doc = (await this.coll.findOne({ _id: keyOf(modelId, version) as never, accountId }, { projection: { summaryJson: 0 } })) as ArtifactDoc | null;
    if (!doc) return null;
    return { version: doc.version, format: doc.format, data: Buffer.from(doc.data.buffer) };
  }

  async summary(accountId: string, modelId: string, version: number): Promise<Record<string, unknown> | null> {
    if (!accountId) throw new Error('accountId is required');
    const doc = await this.coll.findOne({ _id: keyOf(modelId, version) as never, accountId }, { projection: { summaryJson: 1 } });
    return typeof doc?.summaryJson === 'string' ? (JSON.parse(doc.summaryJson) as Record<string, unknown>) : null;
  }

  /** Every version's artifact of the model. */
  async remove(accountId: string, modelId: string): Promise<void> {
    if (!accountId) throw new Error('accountId is required');
    await this.coll.deleteMany({ accountId, $or: [{ _id: modelId as never }, { modelId }] });
  }
}
