import { sqlLiteral as q, type Duck } from '@dap/datasets';
import { MAX_COLUMNS } from '../connectors/rows.ts';
import { LoadError } from './load-error.ts';

/** A column as DuckDB names and types it. */
export interface DuckColumn {
  name: string;
  type: string;
}

/** How a CSV file is read: what DuckDB's sniffer found, with the quote character settled (see `sniffCsv`). */
export interface CsvDialect {
  delimiter: string;
  quote: string;
  escape: string;
  newLine: string;
  comment: string;
  skipRows: number;
  columns: DuckColumn[];
  dateFormat: string | null;
  timestampFormat: string | null;
}

/** Type names as DuckDB prints them; anything else is refused rather than spliced into SQL. */
const DUCK_TYPE = /^[A-Z][A-Z0-9_ ]*(\(\d+(, ?\d+)?\))?$/;

const unempty = (v: unknown) => (v === null || v === undefined || v === '(empty)' ? '' : String(v));

/**
 * DuckDB's sniffer over `sample` rows (-1: the whole file). Its answer "no quote character" covers two
 * different files: one with no quotes at all, and one whose quotes do not parse, such as a quoted value that
 * is never closed. Read without a quote character, the second goes in silently: quoted values keep their
 * quotes and the broken line becomes data. RFC 4180's `"` (doubled inside a value) reads the first file, and
 * a `"` inside an unquoted value (`12" pizza`), exactly as before, and stops the second at the line whose
 * quote never closes; so that is the quote character whenever the sniffer names none.
 */
export async function sniffCsv(duck: Duck, file: string, sample: number, signal?: AbortSignal): Promise<CsvDialect> {
  const res = await duck.run(
    `SELECT Delimiter, Quote, Escape, NewLineDelimiter, Comment, SkipRows, to_json(Columns)::VARCHAR AS columns, DateFormat, TimestampFormat
     FROM sniff_csv(${q(file)}, header = true, sample_size = ${sample})`,
    [],
    { signal },
  );
  const r = res.rows[0];
  if (!r) throw new LoadError('the CSV could not be parsed');
  const columns = (JSON.parse(String(r.columns)) as DuckColumn[]).map((c) => {
    if (!DUCK_TYPE.test(c.type)) throw new LoadError(`the CSV column ${JSON.stringify(c.name.slice(0, 40))} has an unsupported type`);
    return { name: c.name, type: c.type };
  });
  if (columns.length > MAX_COLUMNS) throw new LoadError(`the CSV has ${columns.length} columns; at most ${MAX_COLUMNS} are allowed`);
  const quote = unempty(r.Quote);
  return {
    delimiter: unempty(r.Delimiter),
    quote: quote || '"',
    escape: quote ? unempty(r.Escape) : '"',
    newLine: unempty(r.NewLineDelimiter),
    comment: unempty(r.Comment),
    skipRows: Number(r.SkipRows ?? 0),
    columns,
    dateFormat: r.DateFormat ? String(r.DateFormat) : null,
    timestampFormat: r.TimestampFormat ? String(r.TimestampFormat) : null,
  };
}

const DELIMITERS = /[,;\t|]/;

/**
 * When a row has more fields than the header, DuckDB's sniffer "succeeds" by skipping the rows before it,
 * or by falling back to a single column; both would silently lose data, so both are refused. `header` is
 * the file's first record as text.
 */
export function refuseRagged(d: CsvDialect, header: string): void {
  if (d.skipRows > 0) {
    throw new LoadError(`the CSV could not be parsed: its rows do not have a consistent number of columns (row ${d.skipRows + 1} differs from the header)`);
  }
  if (d.columns.length === 1 && DELIMITERS.test(header.replace(/"[^"]*"/g, ''))) {
    throw new LoadError('the CSV could not be parsed: its rows do not have a consistent number of columns');
  }
}

/**
 * DuckDB's CSV read buffer. Its default (16 × the 2 MB maximum line) kept several 32 MB buffers per thread in
 * memory: with 8 MB, a 118 MiB CSV loaded on two threads peaked ~100 MB lower (+106-122 MB over the
 * process's RSS instead of +197-225 MB, DUCKDB_MEMORY_LIMIT 160 MB) and no slower (512-534 ms vs 561-588).
 */
const CSV_BUFFER_BYTES = 8 * 1024 * 1024;

/** DuckDB reads CSV with the sniffed dialect and the given column types, without sniffing again. */
export function csvReader(file: string, d: CsvDialect, columns: readonly DuckColumn[]): string {
  const opts = [
    'auto_detect = false',
    `buffer_size = ${CSV_BUFFER_BYTES}`,
    'header = true',
    `delim = ${q(d.delimiter)}`,
    `quote = ${q(d.quote)}`,
    `escape = ${q(d.escape)}`,
    `new_line = ${q(d.newLine)}`,
    `comment = ${q(d.comment)}`,
    'skip = 0',
    `columns = {${columns.map((c) => `${q(c.name)}: ${q(c.type)}`).join(', ')}}`,
  ];
  if (d.dateFormat) opts.push(`dateformat = ${q(d.dateFormat)}`);
  if (d.timestampFormat) opts.push(`timestampformat = ${q(d.timestampFormat)}`);
  return `read_csv(${q(file)}, ${opts.join(', ')})`;
}
