import { z } from 'zod';
import {
  EndpointDisabled,
  ModelFailed,
  ModelReady,
  PredictionCompleted,
  ReportCompleted,
  ReportFailed,
  SourceCreated,
  SourceDeleted,
  SourceFailed,
  SourceReady,
  SourceSchemaChanged,
  WebhookTest,
} from './events.ts';
import type { PublicEventType } from './events.ts';

/**
 * The body of a webhook delivery for each public event type: `{type, timestamp, data}`, where `timestamp` is
 * when the event occurred and `data` is the event's own data. The event catalog receivers verify against.
 */
const payload = <T extends PublicEventType, D extends z.ZodType>(envelope: { shape: { type: z.ZodLiteral<T>; data: D } }) =>
  z.object({ type: envelope.shape.type, timestamp: z.string(), data: envelope.shape.data });

export const webhookPayloadSchema = z.discriminatedUnion('type', [
  payload(SourceCreated),
  payload(SourceReady),
  payload(SourceFailed),
  payload(SourceDeleted),
  payload(SourceSchemaChanged),
  payload(ReportCompleted),
  payload(ReportFailed),
  payload(ModelReady),
  payload(ModelFailed),
  payload(PredictionCompleted),
  payload(WebhookTest),
  payload(EndpointDisabled),
]);
export type WebhookPayload = z.infer<typeof webhookPayloadSchema>;
