import type { z } from 'zod';
import type { FieldError } from '@dap/errors';

/** What validating a batch gives: typed inputs, or one error per bad field with paths like `inputs.0.series`. */
export type Validation<I> = { ok: true; inputs: I[] } | { ok: false; errors: FieldError[] };

export type PredictionOutput = Record<string, unknown>;

/**
 * How the catalog runs any model, whatever its kind: built-in numerics today, trained models (parameters
 * from MongoDB) and ONNX sessions later. `validate` is pure and cheap; `predict` only sees validated inputs.
 */
export interface ModelRuntime<I = unknown> {
  validate(inputs: readonly unknown[]): Validation<I>;
  predict(inputs: readonly I[]): PredictionOutput[] | Promise<PredictionOutput[]>;
  /** A rough measure of a batch's work, to decide whether it runs on a worker thread. */
  cost?(inputs: readonly I[]): number;
  /** The same outputs, each with an `explanation`; models that cannot explain leave it out. */
  explain?(inputs: readonly I[]): PredictionOutput[];
}

export const MAX_FIELD_ERRORS = 100;

/**
 * A runtime whose inputs are checked one by one with a schema compiled once, at construction. `checkBatch`
 * may refuse a batch as a whole (e.g. too much total work) after every input is individually valid.
 */
export function schemaRuntime<S extends z.ZodType>(opts: {
  input: S;
  predictOne: (input: z.output<S>) => PredictionOutput;
  checkBatch?: (inputs: readonly z.output<S>[]) => FieldError[];
  cost?: (inputs: readonly z.output<S>[]) => number;
  explainOne?: (input: z.output<S>) => PredictionOutput;
}): ModelRuntime<z.output<S>> {
  return {
    validate(inputs) {
      const ok: z.output<S>[] = [];
      const errors: FieldError[] = [];
      for (let i = 0; i < inputs.length && errors.length < MAX_FIELD_ERRORS; i++) {
        const result = opts.input.safeParse(inputs[i]);
        if (result.success) {
          ok.push(result.data);
          continue;
        }
        for (const issue of result.error.issues) {
          if (errors.length >= MAX_FIELD_ERRORS) break;
          errors.push({ path: ['inputs', i, ...issue.path].map(String).join('.'), message: issue.message });
        }
      }
      if (errors.length) return { ok: false, errors };
      const batchErrors = opts.checkBatch?.(ok) ?? [];
      return batchErrors.length ? { ok: false, errors: batchErrors } : { ok: true, inputs: ok };
    },
    predict: (inputs) => inputs.map(opts.predictOne),
    ...(opts.cost ? { cost: opts.cost } : {}),
    ...(opts.explainOne ? { explain: (inputs: readonly z.output<S>[]) => inputs.map(opts.explainOne!) } : {}),
  };
}
