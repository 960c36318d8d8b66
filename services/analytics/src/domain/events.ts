import { makeEvent, type EventOf } from '@dap/contracts';

/** A report's final state change, as the event written in the same document update. */
export function reportCompleted(
  accountId: string,
  requestId: string | null,
  report: { id: string; sourceId: string; rowCount: number; durationMs: number },
): EventOf<'report.completed'> {
  return makeEvent('report.completed', { accountId, subject: report.id, requestId, data: report });
}

export function reportFailed(accountId: string, requestId: string | null, report: { id: string; sourceId: string; error: string }): EventOf<'report.failed'> {
  return makeEvent('report.failed', { accountId, subject: report.id, requestId, data: report });
}
