import { anomalyModel } from './anomaly.model.ts';
import { forecastModel } from './forecast.model.ts';
import type { BuiltinModel } from '../model.ts';

export { ANOMALY_MODEL_ID } from './anomaly.model.ts';
export { FORECAST_MODEL_ID } from './forecast.model.ts';

/**
 * Built-ins have fixed ids whose ULID part sorts above every real (time-based) id, so "newest first" lists
 * show them first and the same keyset cursor pages through them and the account's own models.
 */
export const BUILTIN_MODELS: readonly BuiltinModel[] = Object.freeze([forecastModel, anomalyModel].sort((a, b) => (a.id < b.id ? 1 : -1)));
