import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A webhook receiver for benchmarks, run as its own process so it competes with neither the service nor
 * the load generator for an event loop. It answers 200 (after RECEIVER_DELAY_MS, default 0), records the
 * arrival time of each webhook-id, and serves them at GET /arrivals?from=<index> as [[id, ms], ...].
 * Paths under /fail answer 500 and are not recorded (a failing endpoint). It prints its port on the first
 * line of stdout.
 */
const delayMs = Number(process.env.RECEIVER_DELAY_MS ?? '0');
const arrivals: Array<[string, number]> = [];

const server = createServer({ keepAliveTimeout: 65_000 }, (req, res) => {
  if (req.method === 'GET' && req.url?.startsWith('/arrivals')) {
    const from = Number(new URL(req.url, 'http://x').searchParams.get('from') ?? '0');
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(arrivals.slice(from)));
    return;
  }
  req.on('data', () => {});
  req.on('end', () => {
    if (req.url?.startsWith('/fail')) return void res.writeHead(500, { 'content-type': 'text/plain' }).end('failing on purpose');
    const id = req.headers['webhook-id'];
    if (typeof id === 'string') arrivals.push([id, Date.now()]);
    const send = () => res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    if (delayMs > 0) setTimeout(send, delayMs);
    else send();
  });
});
server.listen(0, '127.0.0.1', () => process.stdout.write(`${(server.address() as AddressInfo).port}\n`));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
