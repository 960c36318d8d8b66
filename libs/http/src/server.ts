import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { type Express } from 'express';
import type { Lifecycle } from '@dap/lifecycle';
import type { Metrics } from './metrics.ts';

export interface RunningServer {
  server: Server;
  url: string;
  port: number;
  /** Where `GET /metrics` answers, when a metrics port was given. */
  metricsUrl?: string;
  close(): Promise<void>;
}

/** How long a request may take to arrive whole, unless a process raises it for uploads. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 120_000;

async function bind(app: Express, host: string, port: number, requestTimeoutMs = DEFAULT_REQUEST_TIMEOUT_MS): Promise<Omit<RunningServer, 'metricsUrl'>> {
  const server = createServer({ keepAliveTimeout: 65_000, headersTimeout: 30_000, requestTimeout: requestTimeoutMs }, app);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const bound = (server.address() as AddressInfo).port;
  return {
    server,
    port: bound,
    url: `http://${host}:${bound}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
        setTimeout(() => server.closeAllConnections(), 5_000).unref();
      }),
  };
}

/**
 * The metrics listener: `GET /metrics` and nothing else. It is a port of its own so that only the cluster's
 * scraper reaches it (no Service or Ingress routes to it): the API port never serves metrics, which name
 * routes, volumes and internals no customer should see.
 */
export function metricsApp(metrics: Metrics): Express {
  const app = express();
  app.disable('x-powered-by');
  app.get('/metrics', metrics.handler());
  app.use((_req, res) => void res.status(404).type('text/plain').send('not found\n'));
  return app;
}

/**
 * Listens and resolves with the bound URL; `close` stops accepting and waits for in-flight requests. With a
 * `metricsPort` (0 picks a free one), the app's metrics registry (`app.locals.metrics`) is served there too.
 * `requestTimeoutMs` (DEFAULT_REQUEST_TIMEOUT_MS) bounds how long one request may take to arrive: a process that
 * takes large uploads raises it, and cuts a stalled upload by its idle timeout instead.
 */
export async function listen(app: Express, host: string, port: number, opts: { metricsPort?: number | undefined; requestTimeoutMs?: number } = {}): Promise<RunningServer> {
  const main = await bind(app, host, port, opts.requestTimeoutMs);
  if (opts.metricsPort === undefined) return main;
  const metrics = app.locals.metrics as Metrics | undefined;
  if (!metrics) {
    await main.close();
    throw new Error('a metrics port was given for an app without a metrics registry (app.locals.metrics)');
  }
  let side: Awaited<ReturnType<typeof bind>>;
  try {
    side = await bind(metricsApp(metrics), host, opts.metricsPort);
  } catch (err) {
    await main.close();
    throw err;
  }
  return { ...main, metricsUrl: side.url, close: async () => void (await Promise.all([main.close(), side.close()])) };
}

/** Where a started service answers: the API's URL and port, and the metrics listener's URL when it has one. */
export type ServiceAddress = Pick<RunningServer, 'url' | 'port' | 'metricsUrl'>;

export function addressOf(server: RunningServer): ServiceAddress {
  return { url: server.url, port: server.port, metricsUrl: server.metricsUrl };
}

/** Where a service listens, as its parsed config says. */
export interface ListenConfig {
  HOST: string;
  PORT: number;
  METRICS_PORT?: number | undefined;
}

/** A service's HTTP server (and its metrics listener), opened through its lifecycle, so stop() closes it. */
export function openHttpServer(life: Lifecycle, app: Express, config: ListenConfig, opts: { requestTimeoutMs?: number } = {}): Promise<RunningServer> {
  return life.open(
    'http server',
    () => listen(app, config.HOST, config.PORT, { metricsPort: config.METRICS_PORT, ...opts }),
    (s) => s.close(),
  );
}
