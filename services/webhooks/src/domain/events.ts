import { makeEvent } from '@dap/contracts';
import type { CallerContext } from '@dap/contracts';

/** The events this service's state changes carry (written in the same document write as the change). */
export const webhookEvents = {
  created: (caller: CallerContext, id: string, url: string) =>
    makeEvent('webhook.created', { accountId: caller.accountId, subject: id, requestId: caller.requestId, data: { id, url } }),
  deleted: (caller: CallerContext, id: string) => makeEvent('webhook.deleted', { accountId: caller.accountId, subject: id, requestId: caller.requestId, data: { id } }),
  test: (caller: CallerContext, endpointId: string) =>
    makeEvent('webhook.test', {
      accountId: caller.accountId,
      subject: endpointId,
      requestId: caller.requestId,
      data: { endpointId, message: 'This is a test event sent from the API.' },
    }),
};
