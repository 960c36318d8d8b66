import { Duck } from '@dap/datasets';
import type { Table } from '../domain/training/encoding.ts';
import { readTrainingTable } from '../domain/training/parquet-reader.ts';
import { trainModel, TrainingError, type TrainingLimits, type TrainingOutcome, type TrainingSpec } from '../domain/training/train.ts';
import { serveJobs, type JobContext } from './protocol.ts';

/**
 * The training worker: reads a source's Parquet file with its own DuckDB, then encodes, splits, fits and
 * evaluates, all off the service's event loop. Started by a WorkerPool through `@dap/models/train-worker`.
 * A test may pass the table itself instead of a file.
 */
export interface TrainJob {
  spec: TrainingSpec;
  data: { kind: 'parquet'; file: string; maxRows: number } | { kind: 'table'; table: Table };
  limits: TrainingLimits;
  duckdbMemoryLimit?: string;
  /** Where this worker's DuckDB spills (a writable volume); DuckDB's own default when unset. */
  duckdbTempDir?: string;
  duckdbMaxTempSize?: string;
}
export interface TrainJobResult {
  outcome: TrainingOutcome;
  rows: { available: number; used: number };
  /** Where the time went, in ms. */
  timing: { readMs: number; trainMs: number };
}

let duck: Promise<Duck> | null = null;

async function handle(job: TrainJob, ctx: JobContext): Promise<TrainJobResult> {
  const started = performance.now();
  let table: Table;
  let rows: { available: number; used: number };
  if (job.data.kind === 'table') {
    table = job.data.table;
    rows = { available: table.rowCount, used: table.rowCount };
  } else {
    const columns = job.spec.target ? [...job.spec.features, job.spec.target] : job.spec.features;
    const { file, maxRows } = job.data;
    let read;
    try {
      // DuckDB works asynchronously in native code: the pool must not terminate this thread meanwhile.
      read = await ctx.native(async () => {
        duck ??= Duck.open({
          memoryLimit: job.duckdbMemoryLimit ?? '512MB',
          threads: 1,
          ...(job.duckdbTempDir ? { tempDirectory: job.duckdbTempDir } : {}),
          ...(job.duckdbMaxTempSize ? { maxTempSize: job.duckdbMaxTempSize } : {}),
        });
        return readTrainingTable(await duck, file, columns, job.spec.target?.name ?? null, maxRows, job.spec.hyperparameters.seed, ctx.signal);
      });
    } catch (err) {
      if (ctx.signal.aborted) throw new Error('cancelled', { cause: err });
      // DuckDB's message names the file; the caller needs the reason, not our paths.
      const reason = (err as Error).message.split('\n')[0]!.replaceAll(file, 'the data file').slice(0, 300);
      throw new TrainingError(`the source's data could not be read: ${reason}`, { cause: err });
    }
    table = read.table;
    rows = { available: read.available, used: read.used };
  }
  const readMs = performance.now() - started;
  const outcome = await trainModel(job.spec, table, job.limits);
  return { outcome, rows, timing: { readMs: Math.round(readMs), trainMs: Math.round(performance.now() - started - readMs) } };
}

serveJobs(handle, (err) => err instanceof TrainingError);
