import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DatasetStore } from '@dap/datasets';
import { csvReader, refuseRagged, sniffCsv, type CsvDialect } from '../ingest/csv-dialect.ts';
import { LoadError } from '../ingest/load-error.ts';
import { ConnectorCheckError, type ConnectorContext, type UploadConnector } from './connector.ts';
import { duckReason } from './duck-errors.ts';

/** The check parses at most this much of a CSV: enough to catch a wrong dialect, far cheaper than a load. */
export const CSV_PROBE_CHARS = 1024 * 1024;

export interface CsvScan {
  /** Index just past the header record, or -1 when the text is a single record. */
  headerEnd: number;
  /** The longest prefix of whole records no longer than the probe limit (the whole text when it is shorter). */
  probeEnd: number;
}

/** Finds record boundaries without a parser: a line break outside double quotes ends a record (RFC 4180). */
export function scanCsv(text: string, probeChars = CSV_PROBE_CHARS): CsvScan {
  const end = Math.min(text.length, probeChars);
  let inQuotes = false;
  let headerEnd = -1;
  let lastBoundary = 0;
  for (let i = 0; i < end; i++) {
    const c = text.charCodeAt(i);
    if (c === 34) inQuotes = !inQuotes;
    else if (!inQuotes && (c === 10 || c === 13)) {
      if (headerEnd < 0) headerEnd = i + 1;
      lastBoundary = i + 1;
    }
  }
  return { headerEnd, probeEnd: text.length <= probeChars ? text.length : lastBoundary };
}

/**
 * DuckDB's CSV sniffer over a whole file, as the load runs it when it has to, with the load's refusal of
 * ragged rows; a refusal is the customer's 400.
 */
async function sniff(store: DatasetStore, file: string, header: string, roots: string[]): Promise<CsvDialect> {
  try {
    const dialect = await sniffCsv(store.duck, file, -1);
    refuseRagged(dialect, header);
    return dialect;
  } catch (err) {
    if (err instanceof LoadError) throw new ConnectorCheckError('csv', err.message);
    throw new ConnectorCheckError('csv', `the CSV could not be parsed: ${duckReason(err, roots)}`);
  }
}

/** Shape checks in plain JS, then DuckDB's own sniffer over a bounded prefix, so "accepted" means "parses". */
export async function checkCsv(csv: string, ctx: Pick<ConnectorContext, 'store'>): Promise<void> {
  if (!csv.trim()) throw new ConnectorCheckError('csv', 'the CSV is empty');
  if (csv.includes('\u0000')) throw new ConnectorCheckError('csv', 'the CSV contains NUL characters; it looks like a binary file');
  const { headerEnd, probeEnd } = scanCsv(csv);
  if (headerEnd < 0 && csv.length > CSV_PROBE_CHARS) {
    throw new ConnectorCheckError('csv', `the first row of the CSV is longer than ${CSV_PROBE_CHARS} characters`);
  }
  if (headerEnd < 0 || !csv.slice(headerEnd).trim()) {
    throw new ConnectorCheckError('csv', 'the CSV has a header row but no data rows');
  }
  const dir = await mkdtemp(join(tmpdir(), 'dap-csv-probe-'));
  const file = join(dir, 'probe.csv');
  try {
    await writeFile(file, csv.slice(0, probeEnd));
    const dialect = await sniff(ctx.store, file, csv.slice(0, headerEnd), [dir]);
    let rows: number;
    try {
      // Read as the load reads it (the same dialect and quote character), every column as text: types are the load's to settle.
      const reader = csvReader(
        file,
        dialect,
        dialect.columns.map((c) => ({ name: c.name, type: 'VARCHAR' })),
      );
      rows = Number((await ctx.store.duck.run(`SELECT count(*) AS n FROM ${reader}`)).rows[0]?.n ?? 0);
    } catch (err) {
      throw new ConnectorCheckError('csv', `the CSV could not be parsed: ${duckReason(err, [dir])}`);
    }
    if (rows === 0) throw new ConnectorCheckError('csv', 'the CSV has a header row but no data rows');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** The check saw only a prefix of a large file; the loader applies the same dialect checks to the whole file. */
export const csvConnector: UploadConnector<'csv'> = {
  type: 'csv',
  mode: 'upload',
  check: (body, ctx) => checkCsv(body.csv, ctx),
  async stage(body, ctx) {
    await ctx.store.stage(ctx.accountId, ctx.sourceId, 'csv', body.csv);
    return 'csv';
  },
};
