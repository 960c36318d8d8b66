import type { ModelDto } from '@dap/contracts';
import type { ModelRecord } from '../domain/model.ts';

/** The public shape of a model; own models add what they were made from (never internal fields). */
export function toModelDto(m: ModelRecord, parameters?: Record<string, unknown> | null): ModelDto {
  const dto: ModelDto = {
    id: m.id,
    name: m.name,
    type: m.type,
    kind: m.kind,
    status: m.status,
    version: m.version,
    description: m.description,
    features: m.features.map((f) => ({
      name: f.name,
      type: f.type,
      description: f.description,
      ...(f.categories ? { categories: f.categories } : {}),
      ...(f.range ? { range: f.range } : {}),
    })),
    createdAt: m.createdAt.toISOString(),
  };
  if (m.kind === 'builtin') return dto;
  if (m.aliases) dto.aliases = m.aliases;
  if (m.shadowShare !== undefined) dto.shadowShare = m.shadowShare;
  if (m.updatedAt) dto.updatedAt = m.updatedAt.toISOString();
  if (m.kind === 'trained') {
    dto.error = m.error ?? null;
    if (m.training) {
      const t = m.training;
      dto.training = {
        sourceId: t.sourceId,
        target: t.target,
        features: t.features,
        hyperparameters: t.hyperparameters,
        rows: t.rows,
        startedAt: t.startedAt.toISOString(),
        finishedAt: t.finishedAt ? t.finishedAt.toISOString() : null,
        durationMs: t.durationMs,
      };
    }
    if (parameters !== undefined) dto.parameters = parameters;
  }
  if (m.kind === 'onnx' && m.onnx) dto.onnx = { inputs: m.onnx.inputs, outputs: m.onnx.outputs, sizeBytes: m.onnx.sizeBytes, sha256: m.onnx.sha256 };
  return dto;
}
