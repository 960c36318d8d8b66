import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { BenchContext, ScenarioResult } from '../lib/context.ts';
import { round } from '../lib/stats.ts';

/**
 * The harness checking itself without the services: a tiny HTTP server in this process, hit by the load
 * generator process in both modes. `npm test` runs it for about a second to prove the report is written.
 */
export async function selftestScenario(ctx: BenchContext): Promise<ScenarioResult> {
  const server = createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}'));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  try {
    const closed = await ctx.load({ mode: 'closed', url, connections: 4, durationSec: ctx.opts.durationSec, warmupSec: 0 });
    const paced = await ctx.load({ mode: 'paced', url, rate: 200, durationSec: ctx.opts.durationSec, warmupSec: 0 });
    const ok = closed.requests > 0 && paced.requests > 0 && closed.errors === 0 && paced.errors === 0;
    return {
      targets: [
        {
          id: 'selftest.load',
          scenario: 'selftest',
          figure: 'load generator answers',
          target: '> 0 req/s, no errors',
          value: `${Math.round(closed.rps)} req/s closed; ${Math.round(paced.rps)} req/s paced, p99 ${round(paced.latency.p99)} ms`,
          met: ok,
          detail: 'a local HTTP server in the bench process, no services',
        },
      ],
      data: { closed, paced },
    };
  } finally {
    server.close();
  }
}
