import { sqlIdent, sqlLiteral, type Duck } from '@dap/datasets';
import type { FeatureColumn, Scalar, Table } from './encoding.ts';

export interface ReadResult {
  table: Table;
  /** Rows with a target value (all rows for clustering). */
  available: number;
  /** Rows read: all of them, or a deterministic sample of `maxRows` when there are more. */
  used: number;
}

const CAST: Record<FeatureColumn['kind'], string> = { numeric: 'DOUBLE', boolean: 'BOOLEAN', categorical: 'VARCHAR' };

/**
 * Reads the training columns of a source's Parquet file. Rows without a target are skipped. Over the cap,
 * the rows kept are those with the smallest hash of (row number, seed): a sample that is the same on every
 * run, whatever DuckDB's thread count. Column names come from the source's schema and are quoted.
 */
export async function readTrainingTable(
  duck: Duck,
  file: string,
  columns: readonly FeatureColumn[],
  target: string | null,
  maxRows: number,
  seed: number,
  signal?: AbortSignal,
): Promise<ReadResult> {
  const from = `read_parquet(${sqlLiteral(file)}, file_row_number = true)`;
  const where = target ? `WHERE ${sqlIdent(target)} IS NOT NULL` : '';
  const count = await duck.run(`SELECT count(*) AS n FROM ${from} ${where}`, [], { signal });
  const available = Number(count.rows[0]?.n ?? 0);
  const select = columns.map((c, i) => `TRY_CAST(${sqlIdent(c.name)} AS ${CAST[c.kind]}) AS c${i}`).join(', ');
  const order = available > maxRows ? `ORDER BY hash(file_row_number, ${Math.trunc(seed)}) LIMIT ${Math.trunc(maxRows)}` : 'ORDER BY file_row_number';
  const result = await duck.run(`SELECT ${select} FROM ${from} ${where} ${order}`, [], { signal });
  const table: Table = { rowCount: result.rows.length, columns: {} };
  columns.forEach((c, i) => {
    const key = `c${i}`;
    table.columns[c.name] = result.rows.map((r) => {
      const v = r[key] as Scalar | undefined;
      return v === undefined || (typeof v === 'number' && !Number.isFinite(v)) ? null : v;
    });
  });
  return { table, available, used: result.rows.length };
}
