import { DomainError, invalidFields, notFound, type FieldError } from '@dap/errors';
import type { ModelStatus } from './model.ts';

/** The models domain's errors, by their codes in @dap/errors; statuses are chosen at the edge. */
export const modelNotFound = () => notFound('model_not_found', 'model');
export const sourceNotFound = () => notFound('source_not_found', 'source');

export const modelNotReady = (status: ModelStatus) =>
  new DomainError(
    'model_not_ready',
    status === 'training' ? 'the model is still training; predict once its status is ready' : `the model is ${status}; only a ready model can predict`,
  );

export const modelHasNoRuntime = () => new DomainError('model_not_servable', 'this model cannot serve predictions yet');

export const builtinNotDeletable = () => new DomainError('model_builtin_immutable', 'built-in models cannot be deleted');

export const invalidInputs = (errors: FieldError[]) => invalidFields('validation_failed', 'the inputs are invalid', errors);

/** A model's output for an input is NaN or infinite: the input's values are too large in magnitude for it. */
export const nonFiniteOutput = (index: number) => {
  const message = "the model's output for this input is not a finite number: its values are too large in magnitude for the model";
  return new DomainError('model_output_not_finite', `inputs.${index}: ${message}`, { errors: [{ path: `inputs.${index}`, message }] });
};

export const invalidBody = (errors: FieldError[]) => invalidFields('validation_failed', 'the body is invalid', errors);

export const sourceNotReady = (status: string) => new DomainError('source_not_ready', `the source is ${status}; models train on a ready source`);

export const trainingUnavailable = () =>
  new DomainError('training_unavailable', 'training from sources is not configured on this instance (DATASET_DIR is unset)', { retryAfterSeconds: 30 });
export const trainingAtCapacity = () => new DomainError('training_unavailable', 'too many models are training on this instance; retry shortly', { retryAfterSeconds: 30 });

export const versionNotFound = (version: number, latest: number) => new DomainError('model_version_not_found', `the model has no version ${version} (its latest is ${latest})`);
export const aliasNotFound = (alias: string, known: readonly string[]) =>
  new DomainError('model_alias_not_found', `the model has no alias ${JSON.stringify(alias)}; its aliases are ${known.join(', ')}`);
export const builtinNotVersioned = () => new DomainError('model_builtin_immutable', 'built-in models have one version and fixed aliases');
export const versionNotReady = (notReady: string[]) => new DomainError('model_version_not_ready', `only a ready version can be aliased: ${notReady.join('; ')}`);
export const aliasesChanged = () => new DomainError('model_changed', "the model's aliases changed while this request ran; read them again and retry");
export const notRetrainable = () => new DomainError('model_not_retrainable', 'only models trained from a source can be retrained');
export const stillTraining = (version: number) => new DomainError('model_training', `version ${version} is still training; retrain once it is ready or failed`);
export const retrainRaced = () => new DomainError('model_changed', 'the model changed while this request ran (another retraining started, or it was deleted); read it again');
export const onnxTimedOut = (timeoutMs: number) => new DomainError('model_run_timeout', `the ONNX model ran longer than ${timeoutMs} ms on these inputs`);
export const onnxFailed = (reason: string) => new DomainError('model_run_failed', `the ONNX model failed on these inputs: ${reason.slice(0, 500)}`);
