import { z } from 'zod';
import { isoDate, listOf } from './common.ts';

export const MODEL_KINDS = ['builtin', 'trained', 'onnx'] as const;
export const MODEL_STATUSES = ['training', 'ready', 'failed'] as const;
export const MAX_PREDICT_BATCH = 1000;
export const MAX_SERIES_LENGTH = 10_000;
/** Total series values in one predict request (all inputs together), so one request cannot hog a process. */
export const MAX_BATCH_SERIES_VALUES = 200_000;

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
    predictions: z
      .array(z.record(z.string(), z.unknown()))
      .describe("One output per input, in the inputs' order; its fields are the model's (see the model's description)."),
    latencyMs: z.number().describe('Time spent in the model itself, in milliseconds.'),
  })
  .meta({ id: 'Prediction' });
export type PredictionDto = z.infer<typeof predictionSchema>;

const servingWindow = z.object({
  count: z.number().int().describe('Predict requests for this model in the window, failed ones included.'),
  errors: z.number().int().describe('Predict requests that failed (invalid inputs or a model error).'),
  errorRate: z.number().describe('errors / count, 0 when there were no requests.'),
  inputs: z.number().int().describe('Inputs predicted by the successful requests (a batch counts each input).'),
  latencyMs: z
    .object({ p50: z.number().nullable(), p95: z.number().nullable(), p99: z.number().nullable() })
    .describe('Percentiles of the model-call time of successful requests; null when there were none.'),
  sampled: z.boolean().describe('True when the percentiles come from only the most recent requests of a very busy window.'),
});

export const metricsSchema = z
  .object({
    modelId: z.string(),
    modelVersion: z.number().int(),
    evaluation: z
      .record(z.string(), z.unknown())
      .nullable()
      .describe('Held-out evaluation. For built-in models, a fixed backtest on a synthetic series (kind synthetic_backtest).'),
    serving: z.object({ lastHour: servingWindow, lastDay: servingWindow }),
    generatedAt: isoDate,
  })
  .meta({ id: 'ModelMetrics' });
export type MetricsDto = z.infer<typeof metricsSchema>;
