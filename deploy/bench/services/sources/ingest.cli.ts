import { runIngestBench } from './ingest.bench.ts';

/** `node --no-warnings deploy/bench/services/sources/ingest.cli.ts [rows] [runs]`, with the test stack up. */
const rows = Number(process.argv[2] ?? 1_000_000);
const runs = Number(process.argv[3] ?? 3);
const result = await runIngestBench({ rows, runs });
process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
process.exit(0);
