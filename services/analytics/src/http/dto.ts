import type { DashboardDto, DashboardSummaryDto, InsightDto, QueryResultDto, ReportDto, ReportSummaryDto } from '@dap/contracts';
import type { Cell } from '@dap/datasets';
import type { DashboardView } from '../domain/insights.service.ts';
import type { UnsavedResult } from '../domain/reports.service.ts';
import type { DashboardDoc } from '../persistence/dashboard.repository.ts';
import type { InsightDoc } from '../persistence/insight.repository.ts';
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

/** Rows are positional (one array per row, in `columns` order); the API answers one object per row keyed by column name. */
function rowObjects(columns: readonly { name: string }[], rows: readonly Cell[][]): Record<string, Cell>[] {
  return rows.map((row) => {
    const out: Record<string, Cell> = {};
    columns.forEach((c, i) => (out[c.name] = row[i] ?? null));
    return out;
  });
}

export function toReportDto(r: ReportDoc): ReportDto {
  const rows = rowObjects(r.columns, r.rows);
  const { id, query, status, error, columns, rowCount, totalRows, truncated, durationMs, statistics, createdAt, completedAt } = toReportSummaryDto(r);
  return { id, query, status, error, columns, rows, rowCount, totalRows, truncated, durationMs, statistics, createdAt, completedAt };
}

export function toQueryResultDto(r: UnsavedResult): QueryResultDto {
  return {
    saved: false,
    query: r.query as unknown as Record<string, unknown>,
    columns: r.columns,
    rows: rowObjects(r.columns, r.rows),
    rowCount: r.rowCount,
    totalRows: r.totalRows,
    truncated: r.truncated,
    durationMs: r.durationMs,
    statistics: r.statistics,
    completedAt: r.completedAt.toISOString(),
  };
}

export function toInsightDto(i: InsightDoc): InsightDto {
  return {
    id: i._id,
    name: i.name,
    query: i.query as unknown as Record<string, unknown>,
    chart: i.chart,
    createdAt: i.createdAt.toISOString(),
    updatedAt: i.updatedAt.toISOString(),
  };
}

export function toDashboardDto({ dashboard, tiles }: DashboardView): DashboardDto {
  return {
    id: dashboard._id,
    name: dashboard.name,
    tiles: tiles.map(({ id, insightId, x, y, w, h, insight }) => ({ id, insightId, x, y, w, h, insight: toInsightDto(insight) })),
    createdAt: dashboard.createdAt.toISOString(),
    updatedAt: dashboard.updatedAt.toISOString(),
  };
}

/** A list's count is of the stored tiles: it may include tiles of an insight deleted a moment ago. */
export function toDashboardSummaryDto(d: DashboardDoc): DashboardSummaryDto {
  return { id: d._id, name: d.name, tileCount: d.tiles.length, createdAt: d.createdAt.toISOString(), updatedAt: d.updatedAt.toISOString() };
}
