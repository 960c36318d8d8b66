import type { MODEL_KINDS, MODEL_STATUSES } from '@dap/contracts';
import type { ModelRuntime } from './runtime.ts';

export type ModelKind = (typeof MODEL_KINDS)[number];
export type ModelStatus = (typeof MODEL_STATUSES)[number];

export interface ModelFeature {
  name: string;
  type: string;
  description: string;
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
}

export interface BuiltinModel extends ModelRecord {
  kind: 'builtin';
  runtime: ModelRuntime;
  /** A fixed, documented evaluation (not of the caller's data); computed once, on first use. */
  evaluation(): Record<string, unknown>;
}

export function once<T>(fn: () => T): () => T {
  let value: { v: T } | null = null;
  return () => (value ??= { v: fn() }).v;
}
