import { isIP } from 'node:net';
import { networkInterfaces } from 'node:os';
import { canonicalAddress, classifyAddress } from './address-class.ts';
import type { Resolver } from './guard.ts';

/** A host and port the platform itself listens on or talks to. */
export interface Endpoint {
  host: string;
  port: number;
}

/** How long resolved names of the platform's endpoints are trusted before they are resolved again. */
const REFRESH_MS = 60_000;
const RESOLVE_TIMEOUT_MS = 2_000;

/** Every address of this machine's network interfaces, as `os.networkInterfaces()` lists them. */
export function interfaceAddresses(): string[] {
  return Object.values(networkInterfaces())
    .flat()
    .map((i) => i?.address)
    .filter((a): a is string => typeof a === 'string');
}

/** One spelling per address (see canonicalAddress); what is not an address stays as it is. */
function normal(address: string): string {
  return canonicalAddress(address) ?? address.toLowerCase();
}

function isLoopbackName(name: string): boolean {
  const n = name.toLowerCase().replace(/\.$/, '');
  return n === 'localhost' || n.endsWith('.localhost');
}

interface Snapshot {
  /** `address|port` of endpoints on other machines. */
  exact: Set<string>;
  /** Ports the platform listens on on this machine: any loopback or local interface address at them is the platform. */
  localPorts: Set<number>;
  /** This machine's own addresses. */
  local: Set<string>;
}

/**
 * The platform's own endpoints (its databases, brokers, caches and services), which no source or webhook may
 * reach whatever private ranges the operator allows: a tenant could otherwise read other tenants' data
 * straight from the platform's MongoDB. An endpoint on this machine (loopback, an unspecified bind address,
 * or one of its interface addresses) stands for its port on every address of the machine, so another
 * spelling of loopback or the machine's LAN address does not get around it. Names are resolved and
 * re-resolved every minute; a target name equal to an endpoint's name is refused without resolving.
 */
export class PlatformEndpoints {
  private readonly endpoints: Endpoint[] = [];
  private readonly resolve: Resolver;
  private readonly interfaces: () => string[];
  private readonly now: () => number;
  private snapshot: Snapshot;
  private resolved = new Map<string, string[]>();
  private resolvedAt = -Infinity;
  private refreshing: Promise<void> | null = null;

  constructor(endpoints: readonly Endpoint[], opts: { resolve: Resolver; interfaces?: () => string[]; now?: () => number }) {
    this.resolve = opts.resolve;
    this.interfaces = opts.interfaces ?? interfaceAddresses;
    this.now = opts.now ?? Date.now;
    this.endpoints.push(...endpoints.map((e) => ({ host: e.host.toLowerCase().replace(/^\[|\]$/g, ''), port: e.port })));
    this.snapshot = this.build();
  }

  /** As `host:port` (IPv6 in brackets), for the start-up log. */
  describe(): string[] {
    return this.endpoints.map((e) => `${e.host.includes(':') ? `[${e.host}]` : e.host}:${e.port}`);
  }

  /** Adds an endpoint known only once the process runs (the port its own server listens on). */
  add(endpoint: Endpoint): void {
    this.endpoints.push({ host: endpoint.host.toLowerCase().replace(/^\[|\]$/g, ''), port: endpoint.port });
    this.resolvedAt = -Infinity;
    this.snapshot = this.build();
  }

  /**
   * Resolves the endpoints' names the first time (and after `add`); once a minute has passed it resolves them
   * again in the background, so a slow DNS server delays no connection but the very first.
   */
  async ready(): Promise<void> {
    if (this.now() - this.resolvedAt < REFRESH_MS) return;
    this.refreshing ??= this.refresh()
      .catch(() => undefined)
      .finally(() => (this.refreshing = null));
    if (this.resolvedAt === -Infinity) await this.refreshing;
  }

  /** Why the address (reached as `name`, when it was) at `port` may not be dialled, or null when it is not the platform's. */
  refusal(address: string, port: number, name?: string): string | null {
    const target = name && !isIP(name) ? `${name}:${port} (${address})` : `${address.includes(':') ? `[${address}]` : address}:${port}`;
    const why = `the target ${target} is one of this platform's own endpoints, which sources and webhooks may not reach`;
    const n = name?.toLowerCase().replace(/\.$/, '');
    if (n && this.endpoints.some((e) => e.host === n && e.port === port)) return why;
    const a = normal(address);
    if (this.snapshot.exact.has(`${a}|${port}`)) return why;
    if (this.snapshot.localPorts.has(port) && this.isLocal(a)) return why;
    return null;
  }

  private isLocal(address: string): boolean {
    const cls = classifyAddress(address);
    return cls === 'loopback' || cls === 'unspecified' || this.snapshot.local.has(address);
  }

  private async refresh(): Promise<void> {
    const names = [...new Set(this.endpoints.map((e) => e.host).filter((h) => !isIP(h) && !isLoopbackName(h)))];
    const next = new Map(this.resolved);
    await Promise.all(
      names.map(async (name) => {
        let timer: NodeJS.Timeout | undefined;
        try {
          const found = await Promise.race([this.resolve(name), new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error('timeout')), RESOLVE_TIMEOUT_MS)))]);
          next.set(
            name,
            found.map((f) => normal(f.address)),
          );
        } catch {
          // Keeps what it resolved to last; the name itself is still refused.
        } finally {
          clearTimeout(timer);
        }
      }),
    );
    this.resolved = next;
    this.resolvedAt = this.now();
    this.snapshot = this.build();
  }

  private build(): Snapshot {
    const local = new Set(this.interfaces().map(normal));
    const snapshot: Snapshot = { exact: new Set(), localPorts: new Set(), local };
    for (const e of this.endpoints) {
      const addresses = isIP(e.host) ? [normal(e.host)] : isLoopbackName(e.host) ? ['127.0.0.1'] : (this.resolved.get(e.host) ?? []);
      for (const a of addresses) {
        const cls = classifyAddress(a);
        if (cls === 'loopback' || cls === 'unspecified' || local.has(a)) snapshot.localPorts.add(e.port);
        else snapshot.exact.add(`${a}|${e.port}`);
      }
    }
    return snapshot;
  }
}
