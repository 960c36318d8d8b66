import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Express } from 'express';

export interface RunningServer {
  server: Server;
  url: string;
  port: number;
  close(): Promise<void>;
}

/** How long a request may take to arrive whole, unless a process raises it for uploads. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 120_000;

/**
 * Listens and resolves with the bound URL; `close` stops accepting and waits for in-flight requests.
 * `requestTimeoutMs` (DEFAULT_REQUEST_TIMEOUT_MS) bounds how long one request may take to arrive: a process that takes
 * large uploads raises it, and cuts a stalled upload by its idle timeout instead.
 */
export async function listen(app: Express, host: string, port: number, opts: { requestTimeoutMs?: number } = {}): Promise<RunningServer> {
  const server = createServer({ keepAliveTimeout: 65_000, headersTimeout: 30_000, requestTimeout: opts.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS }, app);
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
