import type { MODEL_KINDS, MODEL_STATUSES, TensorSpec } from '@dap/contracts';
import type { FeatureProfile } from './training/drift.ts';
import type { ModelRuntime } from './runtime.ts';

export type ModelKind = (typeof MODEL_KINDS)[number];
export type ModelStatus = (typeof MODEL_STATUSES)[number];

export interface ModelFeature {
  name: string;
  type: string;
  description: string;
  /** Ready trained models, categorical features: the levels the encoder learned, most frequent first. */
  categories?: string[];
  /** Ready trained models, numeric and boolean features: the training values' spread. */
  range?: { min: number | null; max: number | null; mean: number | null };
}

export interface TrainingInfo {
  sourceId: string;
  target: string | null;
  features: string[];
  hyperparameters: Record<string, unknown>;
  rows: { available: number; used: number; train: number; test: number } | null;
  startedAt: Date;
  finishedAt: Date | null;
  durationMs: number | null;
}

export interface OnnxInfo {
  inputs: TensorSpec[];
  outputs: TensorSpec[];
  sizeBytes: number;
  sha256: string;
}

/** What every model in the catalog is, wherever it comes from (code for built-ins, MongoDB for the rest). */
export interface ModelRecord {
  id: string;
  name: string;
  type: string;
  kind: ModelKind;
  status: ModelStatus;
  version: number;
  description: string;
  features: ModelFeature[];
  createdAt: Date;
  updatedAt?: Date;
  /** Why training failed. */
  error?: string | null;
  training?: TrainingInfo;
  onnx?: OnnxInfo;
  /** Held-out evaluation of a trained model. */
  evaluation?: Record<string, unknown> | null;
  /** The training data's feature distributions, for input drift. */
  profile?: FeatureProfile[] | null;
  /** Own models: alias → version (`production` always there; a model from before versions has `production` → 1). */
  aliases?: Record<string, number>;
  /** Own models: share of production predictions copied to the `candidate` version. */
  shadowShare?: number;
}

/** What a model without stored aliases has: it predates versions, so it is version 1 and that serves. */
export const DEFAULT_ALIASES: Readonly<Record<string, number>> = Object.freeze({ production: 1 });
export const PRODUCTION = 'production';
export const CANDIDATE = 'candidate';

export interface BuiltinModel extends ModelRecord {
  kind: 'builtin';
  runtime: ModelRuntime;
  /** Its evaluation: a fixed, documented backtest (not of the caller's data), computed once, on first use. */
  backtest(): Record<string, unknown>;
}

export function once<T>(fn: () => T): () => T {
  let value: { v: T } | null = null;
  return () => (value ??= { v: fn() }).v;
}
