import type { FieldError } from '@dap/errors';
import type { ModelRecord } from './model.ts';
import { MAX_FIELD_ERRORS, type ModelRuntime } from './runtime.ts';
import { categoryValue, encodeRecord, type Encoder, type Scalar } from './training/encoding.ts';
import { columnsPerFeature, estimate, explainForest, explainLinear, nodeExpectations, outputOf, type TrainedArtifact } from './training/trained-model.ts';

export type FeatureRecord = Record<string, Scalar>;

export const MAX_STRING_FEATURE_LENGTH = 10_000;

const EXPECTED: Record<string, { message: string; ok: (v: unknown) => boolean }> = {
  integer: { message: 'expected a number (or null when missing)', ok: (v) => typeof v === 'number' && Number.isFinite(v) },
  number: { message: 'expected a number (or null when missing)', ok: (v) => typeof v === 'number' && Number.isFinite(v) },
  boolean: { message: 'expected true or false (or null when missing)', ok: (v) => typeof v === 'boolean' },
  string: {
    message: `expected a string of at most ${MAX_STRING_FEATURE_LENGTH} characters (or null when missing)`,
    ok: (v) => typeof v === 'string' && v.length <= MAX_STRING_FEATURE_LENGTH,
  },
};

/**
 * Serves a trained model: each input is an object with exactly the model's features (its source columns),
 * null standing for a missing value (the training mean, or no category). Validation is a plain loop: it is
 * on the hot path and names every bad field.
 */
export function trainedRuntime(model: ModelRecord, artifact: TrainedArtifact): ModelRuntime<FeatureRecord> {
  const features = model.features.map((f) => ({ name: f.name, check: EXPECTED[f.type] ?? EXPECTED.number! }));
  const known = new Set(features.map((f) => f.name));
  const list = features.map((f) => f.name).join(', ');
  const explainable = artifact.params.kind !== 'kmeans';
  const groups = columnsPerFeature(artifact.encoder);
  // Node expectations are computed on the first explanation, then kept with the runtime.
  let expectations: number[][][] | null = null;
  const forestExpectations = () => {
    const p = artifact.params;
    if (p.kind !== 'forest') return [];
    return (expectations ??= p.trees.map((t) => nodeExpectations(t, artifact.classes?.length ?? 1)));
  };
  return {
    ...(explainable ? { explain: (inputs: readonly FeatureRecord[]) => inputs.map((input) => explainOne(artifact, groups, forestExpectations(), input)) } : {}),
    validate(inputs) {
      const errors: FieldError[] = [];
      const push = (path: string, message: string) => errors.length < MAX_FIELD_ERRORS && errors.push({ path, message });
      inputs.forEach((raw, i) => {
        if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return void push(`inputs.${i}`, 'expected an object of feature values');
        const input = raw as Record<string, unknown>;
        for (const key of Object.keys(input)) if (!known.has(key)) push(`inputs.${i}.${key}`, `not a feature of this model; its features are ${list}`);
        for (const f of features) {
          const v = input[f.name];
          if (v === undefined) push(`inputs.${i}.${f.name}`, 'required (use null for a missing value)');
          else if (v !== null && !f.check.ok(v)) push(`inputs.${i}.${f.name}`, f.check.message);
        }
      });
      return errors.length ? { ok: false, errors } : { ok: true, inputs: inputs as FeatureRecord[] };
    },
    predict(inputs) {
      const row: number[] = [];
      return inputs.map((input) =>
        flagUnknown(
          artifact.encoder,
          input,
          outputOf(
            artifact,
            estimate(
              artifact,
              encodeRecord(artifact.encoder, (n) => input[n], row),
            ),
          ),
        ),
      );
    },
  };
}

/**
 * Adds `unknownCategories` when a categorical feature holds a value the encoder did not keep: the model
 * answers it as the pooled or reference level, which a caller should know rather than trust blindly.
 */
export function flagUnknown(encoder: Encoder, input: FeatureRecord, output: Record<string, unknown>): Record<string, unknown> {
  let unknown: Record<string, string> | null = null;
  for (const f of encoder.features) {
    if (f.kind !== 'categorical') continue;
    const c = categoryValue(input[f.name]);
    if (c !== null && !f.categories.includes(c)) (unknown ??= {})[f.name] = c;
  }
  return unknown ? { ...output, unknownCategories: unknown } : output;
}

/** One input's answer with its exact additive explanation, encoded columns summed back into their features. */
function explainOne(
  artifact: TrainedArtifact,
  groups: readonly { name: string; columns: number }[],
  expectations: readonly number[][][],
  input: FeatureRecord,
): Record<string, unknown> {
  const x = encodeRecord(artifact.encoder, (n) => input[n], []);
  const e = estimate(artifact, x);
  const classIndex = e.task === 'classification' ? e.classIndex : 0;
  const p = artifact.params;
  const ex = p.kind === 'forest' ? explainForest(p, expectations, x, classIndex) : explainLinear(artifact, x, classIndex)!;
  const contributions: Record<string, number> = {};
  let at = 0;
  for (const g of groups) {
    let sum = 0;
    for (let i = 0; i < g.columns; i++) sum += ex.contributions[at + i]!;
    contributions[g.name] = sum;
    at += g.columns;
  }
  const classifier = e.task === 'classification';
  return {
    ...flagUnknown(artifact.encoder, input, outputOf(artifact, e)),
    explanation: {
      method: p.kind === 'forest' ? 'tree_path' : 'exact_linear',
      space: p.kind === 'logistic' ? 'log_odds' : classifier ? 'probability' : 'prediction',
      ...(classifier ? { class: artifact.classes![classIndex] } : {}),
      baseValue: ex.baseValue,
      value: ex.value,
      contributions,
    },
  };
}
