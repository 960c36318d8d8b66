import type { ParquetLayout } from '../persistence/query.runner.ts';
import type { CompiledQuery } from './query-compiler.ts';
import { parseInstant } from './time-zone.ts';

export interface ScanEstimate {
  rowsRead: number;
  bytesRead: number;
  rowGroups: number;
  rowGroupsTotal: number;
}

/** A Parquet min/max statistic of a time column as a UTC instant (ms), or null when it does not read as one. */
function statInstant(value: string | null): number | null {
  if (value === null) return null;
  // TIMESTAMP WITH TIME ZONE statistics end in a bare hour offset (`+00`).
  const v = /[+-]\d{2}$/.test(value) ? `${value}:00` : value;
  return parseInstant(v, 'UTC');
}

/**
 * What a compiled query reads, from the file's footer and without running it: the row groups its time range
 * does not rule out by their min/max statistics, and in them the compressed bytes of the columns it uses.
 * DuckDB may skip more (it also prunes on filters), never less, so this is what a run is charged and capped on.
 */
export function estimateScan(layout: ParquetLayout, scan: CompiledQuery['scan']): ScanEstimate {
  let rowsRead = 0;
  let bytesRead = 0;
  let rowGroups = 0;
  for (const group of layout) {
    if (scan.ranges && scan.timeField !== null) {
      const stats = group.columns[scan.timeField];
      const min = statInstant(stats?.min ?? null);
      const max = statInstant(stats?.max ?? null);
      // Without statistics the group may hold anything, so it is read.
      const overlaps = min === null || max === null || scan.ranges.some((r) => (r.from === null || max >= r.from) && (r.to === null || min < r.to));
      if (!overlaps) continue;
    }
    rowGroups++;
    rowsRead += group.rows;
    for (const column of scan.columns) bytesRead += group.columns[column]?.bytes ?? 0;
  }
  return { rowsRead, bytesRead, rowGroups, rowGroupsTotal: layout.length };
}

/** The earliest and latest instant of a time column over the file, from the row groups' statistics; null when any lacks them. */
export function timeSpan(layout: ParquetLayout, field: string): { from: number; to: number } | null {
  let from = Infinity;
  let to = -Infinity;
  for (const group of layout) {
    const stats = group.columns[field];
    const min = statInstant(stats?.min ?? null);
    const max = statInstant(stats?.max ?? null);
    // Without them (no statistics written, or only nulls) a time could lie anywhere.
    if (min === null || max === null) return null;
    from = Math.min(from, min);
    to = Math.max(to, max);
  }
  return from <= to ? { from, to } : null;
}
