import { DomainError, notFound } from '@dap/errors';
import { MAX_ENDPOINTS_PER_ACCOUNT } from '../persistence/endpoint.repository.ts';

/** The webhooks domain's errors, by their codes in @dap/errors; statuses are chosen at the edge. */
export const webhookErrors = {
  endpointNotFound: () => notFound('webhook_not_found', 'webhook'),
  messageNotFound: () => notFound('webhook_message_not_found', 'message'),
  targetNotAllowed: (reason: string) =>
    new DomainError('webhook_target_not_allowed', `the webhook URL's target is not allowed: ${reason}`, { errors: [{ path: 'url', message: reason }] }),
  tooManyEndpoints: () => new DomainError('webhook_endpoint_limit', `an account can register at most ${MAX_ENDPOINTS_PER_ACCOUNT} webhook endpoints; delete one first`),
  endpointDisabled: (reason: string | null) =>
    new DomainError('webhook_disabled', `the webhook endpoint is disabled${reason ? ` (${reason})` : ''}; enable it (POST /v1/webhooks/{id}/enable) to receive events again`),
  deliveryInProgress: () => new DomainError('webhook_delivery_in_progress', 'this message is still being delivered to the endpoint; redeliver it once its delivery has finished'),
  deliveryNotPending: () =>
    new DomainError('webhook_delivery_not_pending', 'this message has no retry waiting; redeliver it (POST /v1/webhooks/{id}/deliveries/{messageId}/redeliver) to send it again'),
  rotationConflict: () => new DomainError('webhook_secret_rotation_conflict', 'the secret was rotated by another request at the same time; rotate again if needed'),
};
