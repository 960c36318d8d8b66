/**
 * The proxy library alone, as a floor for the gateway scenario: node:http + http-proxy-middleware, configured
 * as the gateway's proxy is (keep-alive agent, target parsed once, path as sent, no default plugins), with no
 * express, no authentication, no limiter. The gateway's cost above this is its own work. Started by
 * scenarios/gateway.ts with TARGET, HOST and PORT.
 */
import { Agent, createServer } from 'node:http';
import { createProxyMiddleware } from 'http-proxy-middleware';
import { parsedTarget } from '../../../gateway/src/proxy/service-proxy.ts';

const agent = new Agent({ keepAlive: true, maxSockets: 256 });
const proxy = createProxyMiddleware({
  target: parsedTarget(process.env.TARGET ?? ''), // parsed once, as the gateway's
  agent,
  ejectPlugins: true,
  plugins: [
    (server) =>
      server.on('error', (_err, _req, res) => {
        if (!res) return;
        if ('writeHead' in res && !res.headersSent) res.writeHead(502);
        res.end();
      }),
  ],
});
const server = createServer((req, res) => {
  if (req.url === '/healthz') return void res.end('{"status":"ok"}');
  void proxy(req, res, () => {
    res.statusCode = 404;
    res.end();
  });
});
server.keepAliveTimeout = 65_000;
server.listen(Number(process.env.PORT), process.env.HOST ?? '127.0.0.1');
process.on('SIGTERM', () => {
  server.close(() => process.exit(0));
  server.closeIdleConnections();
  agent.destroy();
});
