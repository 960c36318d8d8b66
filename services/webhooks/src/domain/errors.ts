import { AppError } from '@dap/http';
import { MAX_ENDPOINTS_PER_ACCOUNT } from '../persistence/endpoint.repository.ts';

/** The webhooks service's error catalogue; statuses come from the shared codes at the edge. */
export const webhookErrors = {
  targetNotAllowed: (reason: string) => new AppError('unprocessable', `the webhook URL's target is not allowed: ${reason}`, { errors: [{ path: 'url', message: reason }] }),
  tooManyEndpoints: () => new AppError('unprocessable', `an account can register at most ${MAX_ENDPOINTS_PER_ACCOUNT} webhook endpoints; delete one first`),
  endpointDisabled: (reason: string | null) =>
    new AppError('conflict', `the webhook endpoint is disabled${reason ? ` (${reason})` : ''}; enable it (POST /v1/webhooks/{id}/enable) to receive events again`),
  deliveryInProgress: () => new AppError('conflict', 'this message is still being delivered to the endpoint; redeliver it once its delivery has finished'),
  rotationConflict: () => new AppError('conflict', 'the secret was rotated by another request at the same time; rotate again if needed'),
};
