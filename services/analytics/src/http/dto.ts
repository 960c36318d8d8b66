import type { ReportDto, ReportSummaryDto } from '@dap/contracts';
import type { Cell } from '@dap/datasets';
import type { ReportDoc, ReportSummaryDoc } from '../persistence/report.repository.ts';

export function toReportSummaryDto(r: ReportSummaryDoc): ReportSummaryDto {
  return {
    id: r._id,
    query: r.query as unknown as Record<string, unknown>,
    status: r.status,
    error: r.error,
    columns: r.columns,
    rowCount: r.rowCount,
    totalRows: r.totalRows,
    truncated: r.truncated,
    durationMs: r.durationMs,
    statistics: r.statistics,
    createdAt: r.createdAt.toISOString(),
    completedAt: r.completedAt ? r.completedAt.toISOString() : null,
  };
}

/** Rows are stored positionally; the API returns one object per row keyed by column name. */
export function toReportDto(r: ReportDoc): ReportDto {
  const rows = r.rows.map((row) => {
    const out: Record<string, Cell> = {};
    r.columns.forEach((c, i) => (out[c.name] = row[i] ?? null));
    return out;
  });
  const { id, query, status, error, columns, rowCount, totalRows, truncated, durationMs, statistics, createdAt, completedAt } = toReportSummaryDto(r);
  return { id, query, status, error, columns, rows, rowCount, totalRows, truncated, durationMs, statistics, createdAt, completedAt };
}
