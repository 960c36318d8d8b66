import { z } from 'zod';
import { isoDate, listOf } from './common.ts';
import { PUBLIC_EVENT_TYPES } from '../events.ts';

/** An exact public event type, a family wildcard such as `report.*`, or `*`. */
export const eventFilterSchema = z
  .string()
  .max(100)
  .refine(
    (f) =>
      f === '*' ||
      (PUBLIC_EVENT_TYPES as readonly string[]).includes(f) ||
      (f.endsWith('.*') && PUBLIC_EVENT_TYPES.some((t) => t.startsWith(f.slice(0, -1)))),
    { message: `must be one of ${PUBLIC_EVENT_TYPES.join(', ')}, a family wildcard like report.*, or *` },
  );

export const createWebhookBody = z
  .strictObject({
    url: z.string().url().max(2048),
    events: z.array(eventFilterSchema).min(1).max(50).default(['*']),
    description: z.string().max(500).default(''),
  })
  .meta({ id: 'CreateWebhook', examples: [{ url: 'https://example.com/hooks', events: ['source.*', 'report.completed'] }] });
export type CreateWebhookBody = z.infer<typeof createWebhookBody>;

export const webhookSchema = z
  .object({
    id: z.string(),
    url: z.string(),
    events: z.array(z.string()),
    description: z.string(),
    status: z.enum(['enabled', 'disabled']),
    createdAt: isoDate,
    updatedAt: isoDate,
  })
  .meta({ id: 'Webhook' });
export type WebhookDto = z.infer<typeof webhookSchema>;
export const webhookCreatedSchema = webhookSchema
  .extend({ secret: z.string().describe('whsec_… signing secret, shown only in this response') })
  .meta({ id: 'WebhookCreated' });
export const webhookListSchema = listOf(webhookSchema).meta({ id: 'WebhookList' });

export function eventMatches(filters: readonly string[], type: string): boolean {
  return filters.some((f) => f === '*' || f === type || (f.endsWith('.*') && type.startsWith(f.slice(0, -1))));
}
