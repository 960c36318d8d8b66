import { z } from 'zod';

export const problemSchema = z
  .object({
    type: z.string(),
    title: z.string(),
    status: z.number().int(),
    detail: z.string(),
    instance: z.string(),
    code: z.string(),
    requestId: z.string(),
    errors: z
      .array(z.object({ path: z.string(), message: z.string() }))
      .optional()
      .describe('the invalid fields of a 400 validation_failed, at most 100 of them'),
    errorCount: z.number().int().optional().describe('how many invalid fields were found, when there were more than errors lists'),
  })
  .meta({ id: 'Problem' });
export type Problem = z.infer<typeof problemSchema>;

/** What every resource a customer names (a source, a model, an insight, a dashboard, an API key) starts with. */
export const namedResourceSchema = z.object({ id: z.string(), name: z.string() });

/** One message for every way a page size can be wrong (empty, a word, a fraction, out of range, given twice). */
const LIMIT_MESSAGE = { error: 'limit must be a whole number from 1 to 100, given once' };

/** One message for every way a cursor can be wrong: it is opaque, so the only right value is one we gave. */
export const CURSOR_MESSAGE = 'invalid cursor: send the nextCursor of the previous page of this list as it is';

export const listQuerySchema = z.strictObject({
  limit: z.coerce.number(LIMIT_MESSAGE).int(LIMIT_MESSAGE).min(1, LIMIT_MESSAGE).max(100, LIMIT_MESSAGE).default(20).describe('page size, given once'),
  cursor: z
    .string()
    .min(1, CURSOR_MESSAGE)
    .max(200, CURSOR_MESSAGE)
    .regex(/^[A-Za-z0-9_-]+$/, CURSOR_MESSAGE)
    .optional()
    .describe('the nextCursor of the previous page of this same list, as it was given; any other value is refused with 400 (validation_failed)'),
});
export type ListQuery = z.infer<typeof listQuerySchema>;

/**
 * The Idempotency-Key header: 1 to 255 visible ASCII characters; the gateway refuses any other value with a
 * 400. It is taken by the operations for which `operationTakesIdempotencyKey` holds.
 */
export const IDEMPOTENCY_KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

export function listOf<T extends z.ZodType>(item: T) {
  return z.object({ data: z.array(item), hasMore: z.boolean(), nextCursor: z.string().nullable() });
}

export const isoDate = z.string().describe('ISO-8601 UTC timestamp');

/** JSON field names that could be read as MongoDB operators or prototype keys are refused everywhere. */
export const safeKey = z
  .string()
  .min(1)
  .max(128)
  .refine((k) => !k.startsWith('$') && !k.includes('\u0000') && k !== '__proto__' && k !== 'constructor' && k !== 'prototype', {
    message: 'field names may not start with $ or be reserved words',
  });
