import { makeEvent, type CallerContext, type EventOf } from '@dap/contracts';

export function predictionCompleted(
  caller: CallerContext,
  data: { id: string; modelId: string; count: number; latencyMs: number },
): EventOf<'prediction.completed'> {
  return makeEvent('prediction.completed', { accountId: caller.accountId, subject: data.id, requestId: caller.requestId, data });
}
