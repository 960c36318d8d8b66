import type { FileFormat } from '@dap/contracts';
import type { DatasetStore } from '@dap/datasets';
import { ConnectorCheckError } from './connector.ts';
import { checkCsv, scanCsv } from './csv.connector.ts';
import { rowsFromJson } from './json.connector.ts';
import { toRow } from './rows.ts';
import { refuseBinary } from './url-download.ts';

/** The create-time check reads at most this much of a file (a URL's or an upload's). */
export const FILE_PROBE_BYTES = 1024 * 1024;

/**
 * The look at a file's start before it is accepted: it must parse as the format it claims. `complete` says
 * whether `data` is the whole file; when it is not, the last record may be cut and is left out. Errors name
 * `field` (the body field or part the file came in).
 */
export async function checkFileHead(field: string, format: FileFormat, data: Buffer, complete: boolean, ctx: { store: DatasetStore }): Promise<void> {
  if (data.length === 0 || !data.toString('utf8').trim()) throw new ConnectorCheckError(field, 'the file is empty');
  refuseBinary(data, field);
  let text = data.toString('utf8').replace(/^\uFEFF/, '');
  const reword = (err: unknown) => (err instanceof ConnectorCheckError ? new ConnectorCheckError(field, `the file is not valid ${format.toUpperCase()}: ${err.message}`) : err);
  try {
    if (format === 'csv') {
      if (!complete) text = text.slice(0, scanCsv(text, text.length - 1).probeEnd);
      await checkCsv(text, ctx);
    } else if (format === 'json') {
      if (complete) rowsFromJson(text);
      else if (!/^\s*\[\s*[{\]]/.test(text)) throw new ConnectorCheckError(field, 'the JSON must be an array of objects');
    } else {
      const lines = text.split(/\r?\n/);
      if (!complete) lines.pop(); // the last line may be cut in the middle
      let rows = 0;
      for (const [i, line] of lines.entries()) {
        if (!line.trim()) continue;
        let value: unknown;
        try {
          value = JSON.parse(line);
        } catch {
          throw new ConnectorCheckError(field, `line ${i + 1} is not valid JSON`);
        }
        toRow(value, field, `line ${i + 1}`);
        rows++;
      }
      if (!rows) throw new ConnectorCheckError(field, 'the NDJSON has no rows');
    }
  } catch (err) {
    throw reword(err);
  }
}
