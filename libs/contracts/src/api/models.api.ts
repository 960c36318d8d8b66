import { z } from 'zod';
import { isoDate, listOf } from './common.ts';

export const MODEL_KINDS = ['builtin', 'trained', 'onnx'] as const;
export const MODEL_STATUSES = ['training', 'ready', 'failed'] as const;
export const MAX_PREDICT_BATCH = 1000;
export const MAX_SERIES_LENGTH = 10_000;

export const featureSchema = z.object({ name: z.string(), type: z.string(), description: z.string() });

export const modelSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    type: z.string(),
    kind: z.enum(MODEL_KINDS),
    status: z.enum(MODEL_STATUSES),
    version: z.number().int(),
    description: z.string(),
    features: z.array(featureSchema),
    createdAt: isoDate,
  })
  .meta({ id: 'Model' });
export type ModelDto = z.infer<typeof modelSchema>;
export const modelListSchema = listOf(modelSchema).meta({ id: 'ModelList' });

/** Each input's shape is the model's own; the model validates it and names the bad field. */
export const predictBody = z
  .strictObject({ inputs: z.array(z.record(z.string(), z.unknown())).min(1).max(MAX_PREDICT_BATCH) })
  .meta({
    id: 'PredictRequest',
    examples: [{ inputs: [{ series: [12, 14, 13, 15, 17, 16, 18, 20], horizon: 3, seasonLength: 4 }] }],
  });
export type PredictBody = z.infer<typeof predictBody>;

export const predictionSchema = z
  .object({
    id: z.string(),
    modelId: z.string(),
    modelVersion: z.number().int(),
    predictions: z.array(z.record(z.string(), z.unknown())),
    latencyMs: z.number(),
  })
  .meta({ id: 'Prediction' });
export type PredictionDto = z.infer<typeof predictionSchema>;

const servingWindow = z.object({
  count: z.number().int(),
  errors: z.number().int(),
  errorRate: z.number(),
  latencyMs: z.object({ p50: z.number().nullable(), p95: z.number().nullable(), p99: z.number().nullable() }),
});

export const metricsSchema = z
  .object({
    modelId: z.string(),
    modelVersion: z.number().int(),
    evaluation: z.record(z.string(), z.unknown()).nullable(),
    serving: z.object({ lastHour: servingWindow, lastDay: servingWindow }),
    generatedAt: isoDate,
  })
  .meta({ id: 'ModelMetrics' });
export type MetricsDto = z.infer<typeof metricsSchema>;
