import { AppError, notFound, type FieldError } from '@dap/http';
import type { ModelStatus } from './model.ts';

/** The models domain's errors; statuses come from the shared catalogue at the edge. */
export const modelNotFound = () => notFound('model');

export const modelNotReady = (status: ModelStatus) =>
  new AppError('conflict', `the model is ${status}; only a ready model can predict`);

export const modelHasNoRuntime = () => new AppError('conflict', 'this model cannot serve predictions yet');

export const invalidInputs = (errors: FieldError[]) =>
  new AppError('validation_failed', `the inputs are invalid: ${errors.slice(0, 5).map((e) => `${e.path}: ${e.message}`).join('; ')}`, { errors });
