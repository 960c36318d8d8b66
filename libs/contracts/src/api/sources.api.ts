import { z } from 'zod';
import { isoDate, listOf, safeKey } from './common.ts';

export const SOURCE_TYPES = ['inline', 'csv', 'json', 'ndjson'] as const;
export const SOURCE_STATUSES = ['pending', 'syncing', 'ready', 'failed'] as const;
export const COLUMN_TYPES = ['string', 'integer', 'number', 'boolean', 'timestamp'] as const;
export type SourceType = (typeof SOURCE_TYPES)[number];
export type SourceStatus = (typeof SOURCE_STATUSES)[number];

export const MAX_INLINE_ROWS = 10_000;
export const MAX_CSV_CHARS = 5_000_000;
/** Uploaded file contents (CSV, JSON, NDJSON) travel as one string field of the JSON body. */
export const MAX_UPLOAD_CHARS = MAX_CSV_CHARS;

const scalar = z.union([z.string().max(10_000), z.number(), z.boolean(), z.null()]);
const rowSchema = z
  .record(safeKey, scalar)
  .refine((r) => Object.keys(r).length > 0 && Object.keys(r).length <= 500, { message: 'a row has 1 to 500 fields' });

const name = z.string().trim().min(1).max(200);

export const createSourceBody = z
  .discriminatedUnion('type', [
    z.strictObject({ type: z.literal('inline'), name, rows: z.array(rowSchema).min(1).max(MAX_INLINE_ROWS) }),
    z.strictObject({ type: z.literal('csv'), name, csv: z.string().min(1).max(MAX_CSV_CHARS).describe('CSV text; the first row is the header') }),
    z.strictObject({ type: z.literal('json'), name, json: z.string().min(1).max(MAX_UPLOAD_CHARS).describe('JSON text: an array of objects') }),
    z.strictObject({ type: z.literal('ndjson'), name, ndjson: z.string().min(1).max(MAX_UPLOAD_CHARS).describe('NDJSON text: one object per line') }),
  ])
  .meta({
    id: 'CreateSource',
    examples: [
      { type: 'inline', name: 'Orders', rows: [{ id: 1, amount: 12.5, country: 'NO', paid: true, at: '2024-05-01T10:00:00Z' }] },
      { type: 'csv', name: 'Sales', csv: 'region,units\nnorth,3\nsouth,7\n' },
    ],
  });
export type CreateSourceBody = z.infer<typeof createSourceBody>;

export const columnSchema = z.object({ name: z.string(), type: z.enum(COLUMN_TYPES) });
export type Column = z.infer<typeof columnSchema>;

export const sourceSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    type: z.enum(SOURCE_TYPES),
    status: z.enum(SOURCE_STATUSES),
    error: z.string().nullable(),
    schema: z.array(columnSchema),
    rowCount: z.number().int(),
    lastSyncedAt: isoDate.nullable(),
    createdAt: isoDate,
    updatedAt: isoDate,
  })
  .meta({ id: 'Source' });
export type SourceDto = z.infer<typeof sourceSchema>;
export const sourceListSchema = listOf(sourceSchema).meta({ id: 'SourceList' });
