import { AppError, notFound, type FieldError } from '@dap/http';
import type { ModelStatus } from './model.ts';

/** The models domain's errors; statuses come from the shared catalogue at the edge. */
export const modelNotFound = () => notFound('model');
export const sourceNotFound = () => notFound('source');

export const modelNotReady = (status: ModelStatus) =>
  new AppError('conflict', status === 'training' ? 'the model is still training; predict once its status is ready' : `the model is ${status}; only a ready model can predict`);

export const modelHasNoRuntime = () => new AppError('conflict', 'this model cannot serve predictions yet');

export const builtinNotDeletable = () => new AppError('conflict', 'built-in models cannot be deleted');

export const invalidInputs = (errors: FieldError[]) =>
  new AppError(
    'validation_failed',
    `the inputs are invalid: ${errors
      .slice(0, 5)
      .map((e) => `${e.path}: ${e.message}`)
      .join('; ')}`,
    { errors },
  );

/** A model's output for an input is NaN or infinite: the input's values are too large in magnitude for it. */
export const nonFiniteOutput = (index: number) => {
  const message = "the model's output for this input is not a finite number: its values are too large in magnitude for the model";
  return new AppError('unprocessable', `inputs.${index}: ${message}`, { errors: [{ path: `inputs.${index}`, message }] });
};

export const invalidBody = (errors: FieldError[]) =>
  new AppError(
    'validation_failed',
    `the body is invalid: ${errors
      .slice(0, 5)
      .map((e) => `${e.path}: ${e.message}`)
      .join('; ')}`,
    { errors },
  );

export const sourceNotReady = (status: string) => new AppError('conflict', `the source is ${status}; models train on a ready source`);

export const trainingUnavailable = () =>
  new AppError('unavailable', 'training from sources is not configured on this instance (DATASET_DIR is unset)', { headers: { 'Retry-After': '30' } });

export const versionNotFound = (version: number, latest: number) => new AppError('not_found', `the model has no version ${version} (its latest is ${latest})`);
export const aliasNotFound = (alias: string, known: readonly string[]) =>
  new AppError('not_found', `the model has no alias ${JSON.stringify(alias)}; its aliases are ${known.join(', ')}`);
export const builtinNotVersioned = () => new AppError('conflict', 'built-in models have one version and fixed aliases');
