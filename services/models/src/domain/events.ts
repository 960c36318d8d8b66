import { makeEvent, type CallerContext, type EventOf } from '@dap/contracts';

export function predictionCompleted(caller: CallerContext, data: { id: string; modelId: string; count: number; latencyMs: number }): EventOf<'prediction.completed'> {
  return makeEvent('prediction.completed', { accountId: caller.accountId, subject: data.id, requestId: caller.requestId, data });
}

export function modelReady(accountId: string, requestId: string | null, model: { id: string; name: string; type: string }): EventOf<'model.ready'> {
  return makeEvent('model.ready', { accountId, subject: model.id, requestId, data: { id: model.id, name: model.name, type: model.type } });
}

export function modelFailed(accountId: string, requestId: string | null, model: { id: string; name: string }, error: string): EventOf<'model.failed'> {
  return makeEvent('model.failed', { accountId, subject: model.id, requestId, data: { id: model.id, name: model.name, error } });
}
