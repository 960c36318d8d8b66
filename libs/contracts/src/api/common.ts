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

/** One message for every way a page size can be wrong (empty, a word, a fraction, out of range, given twice). */
const LIMIT_MESSAGE = { error: 'limit must be a whole number from 1 to 100, given once' };

export const listQuerySchema = z.strictObject({
  limit: z.coerce.number(LIMIT_MESSAGE).int(LIMIT_MESSAGE).min(1, LIMIT_MESSAGE).max(100, LIMIT_MESSAGE).default(20),
  cursor: z.string().max(200).optional(),
});
export type ListQuery = z.infer<typeof listQuerySchema>;

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
