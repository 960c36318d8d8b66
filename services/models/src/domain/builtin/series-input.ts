import { z } from 'zod';
import { MAX_BATCH_SERIES_VALUES, MAX_SERIES_LENGTH } from '@dap/contracts';
import type { FieldError } from '@dap/errors';

/** Shared pieces of the series models' inputs. Values are bounded so sums of squares stay finite. */
export const SERIES_VALUE_LIMIT = 1e15;
export const seriesField = z.array(z.number().min(-SERIES_VALUE_LIMIT).max(SERIES_VALUE_LIMIT)).min(3).max(MAX_SERIES_LENGTH);
export const seasonLengthField = z.number().int().min(2).max(365).optional();

/** Work grows linearly with the number of values. */
export const seriesBatchCost = (inputs: readonly { series: readonly number[] }[]) => inputs.reduce((s, i) => s + i.series.length, 0);

/** The batch's total work is capped too, so one request cannot hold the event loop for long. */
export function checkSeriesBatch(inputs: readonly { series: readonly number[] }[]): FieldError[] {
  const total = seriesBatchCost(inputs);
  return total > MAX_BATCH_SERIES_VALUES
    ? [{ path: 'inputs', message: `the batch holds ${total} series values in all; at most ${MAX_BATCH_SERIES_VALUES} are allowed per request` }]
    : [];
}
