import type { RemoteSourceType } from '@dap/contracts';
import { StagingWriter } from '../ingest/staging-file.ts';
import type { PullContext, PullResult, RemoteConnector, RemoteContext } from './connector.ts';
import { withDeadline } from './deadline.ts';

/**
 * What a database connector knows about its engine. The skeleton (`databaseConnection`) gives every engine the
 * same deadlines, staging file, clean-up and error mapping, so each connector only says how to connect, probe
 * and read.
 */
export interface DatabaseDriver<S, C> {
  /** The engine's name in messages: "checking the PostgreSQL source", "reading from PostgreSQL". */
  label: string;
  connect(spec: S, ctx: RemoteContext, signal: AbortSignal): Promise<C>;
  /** Closes the connection, never throwing (db-spec's closeQuietly). */
  close(client: C): Promise<void>;
  /** The customer-facing error for whatever connecting, probing or reading threw. */
  failure(err: unknown, spec: S): Error;
  /** Proves the source can be read (the statement parses, the collection exists) while reading little or nothing. */
  probe(client: C, spec: S): Promise<void>;
  /** Reads every row into the staging file (NDJSON); the skeleton commits it, or aborts it on failure. */
  read(client: C, spec: S, writer: StagingWriter): Promise<Omit<PullResult, 'format'>>;
}

/** `check` and `pull` of a database connector, from its driver. */
export function databaseConnection<T extends RemoteSourceType, S, C>(driver: DatabaseDriver<S, C>): Pick<RemoteConnector<T, S>, 'check' | 'pull'> {
  return {
    async check(spec: S, ctx: RemoteContext): Promise<void> {
      await withDeadline(
        ctx.signal,
        ctx.limits.checkTimeoutMs,
        `checking the ${driver.label} source`,
        async (signal) => {
          let client: C | null = null;
          try {
            client = await driver.connect(spec, ctx, signal);
            await driver.probe(client, spec);
          } catch (err) {
            throw driver.failure(err, spec);
          } finally {
            if (client !== null) await driver.close(client);
          }
        },
        'connection',
      );
    },

    async pull(spec: S, ctx: PullContext): Promise<PullResult> {
      return withDeadline(
        ctx.signal,
        ctx.limits.dbTimeoutMs,
        `reading from ${driver.label}`,
        async (signal) => {
          let client: C | null = null;
          const writer = await StagingWriter.open(ctx.store, ctx.accountId, ctx.sourceId, 'ndjson', ctx.limits.maxBytes);
          try {
            client = await driver.connect(spec, ctx, signal);
            const read = await driver.read(client, spec, writer);
            await writer.commit();
            return { format: 'ndjson', ...read };
          } catch (err) {
            await writer.abort();
            throw driver.failure(err, spec);
          } finally {
            if (client !== null) await driver.close(client);
          }
        },
        'connection',
      );
    },
  };
}

/**
 * Writes one line per row, a megabyte of text at a time: the staging writer's await per call would otherwise
 * cost a promise per row. Answers how many rows there were.
 */
export async function writeRows<R>(rows: AsyncIterable<R>, line: (row: R) => string, writer: StagingWriter): Promise<number> {
  let text = '';
  let count = 0;
  for await (const row of rows) {
    text += line(row);
    count++;
    if (text.length >= 1024 * 1024) {
      await writer.write(text);
      text = '';
    }
  }
  await writer.write(text);
  return count;
}
