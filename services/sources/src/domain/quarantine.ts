import { rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Column } from '@dap/contracts';
import { sqlIdent as id, sqlLiteral as q, type DatasetStore } from '@dap/datasets';
import type { SchemaDiff } from './schema-drift.ts';

/** The rows the last quarantining sync set aside, beside the source's data (removed with it). */
export const QUARANTINE_FILE = 'quarantine.csv';

/** The DuckDB type each API column type is stored as. */
export const DUCK_TYPE: Record<Column['type'], string> = { string: 'VARCHAR', integer: 'BIGINT', number: 'DOUBLE', boolean: 'BOOLEAN', timestamp: 'TIMESTAMP' };

export interface QuarantineCounts {
  read: number;
  loaded: number;
  quarantined: number;
}

/**
 * Whether a row fits the old schema: every old column is there, an added column is empty, and a retyped value
 * converts to its old type without change (text is taken when it parses; anything else must convert back to
 * the same value, so 2.5 does not fit an integer column). A removed column fits no row: its values are gone.
 */
function fitsOld(diff: SchemaDiff): string {
  if (diff.removed.length) return 'false';
  const terms = [
    ...diff.added.map((c) => `${id(c.name)} IS NULL`),
    ...diff.retyped.map((c) => {
      const old = DUCK_TYPE[c.from as Column['type']] ?? 'VARCHAR';
      const col = id(c.name);
      const converts =
        c.to === 'string'
          ? `TRY_CAST(${col} AS ${old}) IS NOT NULL`
          : `coalesce(TRY_CAST(TRY_CAST(${col} AS ${old}) AS ${DUCK_TYPE[c.to as Column['type']] ?? 'VARCHAR'}) = ${col}, false)`;
      return `(${col} IS NULL OR ${converts})`;
    }),
  ];
  return terms.length ? terms.join(' AND ') : 'true';
}

/**
 * Splits a new data file whose columns changed: the rows that fit the old schema go, in the old schema's
 * columns and types, into a new file to publish; the others go to the source's quarantine CSV with every
 * column read. Rows read must equal rows loaded plus rows quarantined, or the sync fails.
 */
export async function quarantineRows(
  store: DatasetStore,
  dir: string,
  input: { file: string; oldSchema: readonly Column[]; diff: SchemaDiff; newFile: () => string },
): Promise<{ file: string; counts: QuarantineCounts }> {
  const src = `read_parquet(${q(input.file)})`;
  const fit = fitsOld(input.diff);
  const kept = input.oldSchema.map((c) => `CAST(${id(c.name)} AS ${DUCK_TYPE[c.type]}) AS ${id(c.name)}`).join(', ');
  const out = input.newFile();
  const csvTmp = join(dir, `${QUARANTINE_FILE}.${process.pid}.tmp`);
  const count = async (sql: string) => Number((await store.duck.run(sql)).rows[0]?.n ?? 0);
  try {
    const read = await count(`SELECT count(*) AS n FROM ${src}`);
    // A removed column fits no row, so then the published file is empty but keeps the old columns.
    const loadedFrom = input.diff.removed.length
      ? `SELECT ${input.oldSchema.map((c) => `CAST(NULL AS ${DUCK_TYPE[c.type]}) AS ${id(c.name)}`).join(', ')} WHERE false`
      : `SELECT ${kept} FROM ${src} WHERE ${fit}`;
    await store.duck.run(`COPY (${loadedFrom}) TO ${q(out)} (FORMAT parquet)`);
    await store.duck.run(`COPY (SELECT * FROM ${src} WHERE NOT (${fit})) TO ${q(csvTmp)} (FORMAT csv, HEADER true)`);
    const loaded = await count(`SELECT count(*) AS n FROM read_parquet(${q(out)})`);
    const quarantined = await count(`SELECT count(*) AS n FROM read_csv(${q(csvTmp)}, header = true, all_varchar = true)`);
    if (read !== loaded + quarantined) throw new Error(`quarantine lost rows: read ${read}, loaded ${loaded}, quarantined ${quarantined}`);
    if (quarantined > 0) await rename(csvTmp, join(dir, QUARANTINE_FILE));
    return { file: out, counts: { read, loaded, quarantined } };
  } finally {
    await rm(csvTmp, { force: true });
  }
}
