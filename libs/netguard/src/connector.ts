import { isIP } from 'node:net';
import { buildConnector } from 'undici';
import { bareHost, type OutboundGuard } from './guard.ts';

/**
 * How a host is dialled: through the guard (every address checked at connect time), or at an address the
 * guard already resolved and checked (`OutboundGuard.pin`, e.g. in another thread), which is then the one dialled.
 */
export type Dial = { guard: OutboundGuard } | { pinned: { address: string; family: 4 | 6 } };

export interface GuardedConnectorOptions {
  /** TCP connect and TLS handshake limit (undici's default is 10 s). */
  timeoutMs?: number;
}

/**
 * undici's `connect` for outbound HTTP(S) through the SSRF guard (docs/architecture.md, "Outbound
 * connections"). With a guard, an IP literal is checked before dialling, and a name is resolved by the guard's
 * `lookup`, which refuses it when any of its addresses is not allowed and hands the socket only checked ones:
 * the address dialled is the address checked, on every connection, so a DNS answer that changed since the
 * target was accepted (rebinding) is caught. A pinned address is dialled as it is. TLS verifies the
 * certificate against the URL's host name either way. HTTP/1.1 only (no ALPN h2).
 */
export function guardedConnector(dial: Dial, opts: GuardedConnectorOptions = {}): buildConnector.connector {
  const base = { allowH2: false, ...(opts.timeoutMs ? { timeout: opts.timeoutMs } : {}) };
  if ('pinned' in dial) {
    const connect = buildConnector(base);
    return (options, callback) => {
      const host = bareHost(options.hostname);
      const servername = options.servername || (isIP(host) ? undefined : host);
      connect({ ...options, hostname: dial.pinned.address, ...(servername ? { servername } : {}) }, callback);
    };
  }
  // The guard's checks depend on the port (the platform's own endpoints are host:port): one connector per port.
  const byPort = new Map<number, buildConnector.connector>();
  return (options, callback) => {
    const host = bareHost(options.hostname);
    const port = Number(options.port) || (options.protocol === 'https:' ? 443 : 80);
    let connect = byPort.get(port);
    if (!connect) byPort.set(port, (connect = buildConnector({ ...base, lookup: dial.guard.lookupFor(port) })));
    const open = connect;
    dial.guard.checkLiteral(host, port).then(
      () => open({ ...options, hostname: host }, callback),
      (err: unknown) => callback(err as Error, null),
    );
  };
}
