import type { Column, IncrementalSettings } from '@dap/contracts';
import { sqlIdent as id, sqlLiteral as q, type DatasetStore } from '@dap/datasets';
import { ConnectorCheckError } from './connectors/connector.ts';
import { DUCK_TYPE } from './quarantine.ts';

const PARQUET = 'FORMAT parquet, COMPRESSION zstd';

/**
 * Merges an incremental pull into the source's published data, into `out`; answers how many rows of the pull
 * were written. Columns are matched by name, so a column the pull adds is empty in the older rows.
 *
 * - With a primary key, a pulled row replaces the stored row with the same key (keys compared with NULL equal
 *   to NULL); of several pulled rows with one key, the one with the highest cursor wins.
 * - Without one, pulled rows are appended, except those already stored: the pull re-reads every row at the
 *   last cursor value (and after a crash before the cursor was saved, every row since the cursor before), so
 *   the pulled rows are matched against the stored rows from the pull's lowest cursor value on, whole row
 *   against whole row and counted with multiplicity (EXCEPT ALL). A new row identical in every column to one
 *   stored at that same cursor value cannot be told apart from it and is not added.
 */
export async function mergeIncrement(
  store: DatasetStore,
  input: { current: string; pulled: string; pulledSchema: readonly Column[]; currentSchema: readonly Column[]; out: string; settings: IncrementalSettings },
): Promise<{ merged: number }> {
  const { settings } = input;
  const pulledNames = new Set(input.pulledSchema.map((c) => c.name));
  const currentNames = new Set(input.currentSchema.map((c) => c.name));
  const cursor = id(settings.cursorField);
  if (!pulledNames.has(settings.cursorField)) throw new ConnectorCheckError('incremental.cursorField', `the data has no column ${settings.cursorField} to sync incrementally by`);
  const cur = `read_parquet(${q(input.current)})`;
  const pulled = `read_parquet(${q(input.pulled)})`;
  const count = async (sql: string) => Number((await store.duck.run(sql)).rows[0]?.n ?? 0);

  if (settings.primaryKey?.length) {
    const missing = settings.primaryKey.filter((k) => !pulledNames.has(k) || !currentNames.has(k));
    if (missing.length) throw new ConnectorCheckError('incremental.primaryKey', `the data has no column ${missing.join(', ')} to merge rows by`);
    const keys = settings.primaryKey.map(id);
    const newest = `(SELECT * FROM ${pulled} QUALIFY row_number() OVER (PARTITION BY ${keys.join(', ')} ORDER BY ${cursor} DESC NULLS LAST) = 1)`;
    const sameKey = keys.map((k) => `n.${k} IS NOT DISTINCT FROM o.${k}`).join(' AND ');
    await store.duck.run(
      `COPY (SELECT o.* FROM ${cur} o WHERE NOT EXISTS (SELECT 1 FROM ${newest} n WHERE ${sameKey}) UNION ALL BY NAME SELECT * FROM ${newest}) TO ${q(input.out)} (${PARQUET})`,
    );
    return { merged: await count(`SELECT count(*) AS n FROM ${newest}`) };
  }

  // The stored rows in the pull's columns and order (a column they lack is NULL), for EXCEPT ALL.
  const asPulled = input.pulledSchema.map((c) => (currentNames.has(c.name) ? `TRY_CAST(o.${id(c.name)} AS ${typeOf(c)})` : `CAST(NULL AS ${typeOf(c)})`)).join(', ');
  const pulledCols = input.pulledSchema.map((c) => id(c.name)).join(', ');
  const stored = currentNames.has(settings.cursorField)
    ? `SELECT ${asPulled} FROM ${cur} o WHERE o.${cursor} >= (SELECT min(${cursor}) FROM ${pulled})`
    : `SELECT ${asPulled} FROM ${cur} o WHERE false`;
  const fresh = `(SELECT ${pulledCols} FROM ${pulled} EXCEPT ALL ${stored})`;
  await store.duck.run(`COPY (SELECT * FROM ${cur} UNION ALL BY NAME SELECT * FROM ${fresh}) TO ${q(input.out)} (${PARQUET})`);
  return { merged: await count(`SELECT count(*) AS n FROM ${fresh}`) };
}

const typeOf = (c: Column) => DUCK_TYPE[c.type] ?? 'VARCHAR';
