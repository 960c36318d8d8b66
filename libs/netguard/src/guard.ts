import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import { AllowedRanges, isAllowedAddress, nameRefusal, refusal, type PrivateTargets } from './address-class.ts';
import { PlatformEndpoints, type Endpoint } from './platform-endpoints.ts';

/** Resolves a name to every address it has (what `dns.lookup(name, {all: true})` answers). */
export type Resolver = (hostname: string) => Promise<LookupAddress[]>;

export const systemResolver: Resolver = (hostname) =>
  new Promise((resolve, reject) => dnsLookup(hostname, { all: true, verbatim: true }, (err, addresses) => (err ? reject(err) : resolve(addresses))));

/** The target of a connection is not allowed; its message says which address and why, and is safe to show. */
export class DisallowedTargetError extends Error {
  readonly code = 'ERR_DISALLOWED_TARGET';
  override name = 'DisallowedTargetError';
}

/** The host name resolves to no address; `code` is the one Node gives a failed lookup. */
export class HostNotFoundError extends Error {
  readonly code = 'ENOTFOUND';
  override name = 'HostNotFoundError';
  constructor(host: string) {
    super(`the host ${host} was not found`);
  }
}

export interface GuardOptions {
  /** ALLOW_PRIVATE_TARGETS: the loopback, private and unique-local ranges also dialled (never link-local or cloud metadata). */
  allowPrivate: PrivateTargets;
  /** The platform's own endpoints, refused whatever `allowPrivate` allows. */
  platform?: readonly Endpoint[] | PlatformEndpoints;
  resolve?: Resolver;
  /** For tests only: addresses to treat as public (a loopback server standing in for a public host). */
  treatAsPublic?: readonly string[];
}

/** Strips the brackets a URL puts around an IPv6 host. */
export function bareHost(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}

/** A URL's host as a socket dials it: without IPv6 brackets. */
export function hostOf(url: URL): string {
  return bareHost(url.hostname);
}

/** The port a URL connects to, its scheme's default when it names none. */
export function portOf(url: URL): number {
  return url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
}

/**
 * The SSRF guard for outbound connections (docs/architecture.md): source pulls and webhook deliveries. The
 * rule: the IP address actually dialled must be public, or inside the private ranges an operator allows, and
 * never one of the platform's own endpoints (at that port).
 *
 * - HTTP(S) and MongoDB dial through `lookupFor(port)`, a resolver that refuses a name when ANY of its
 *   addresses is not allowed and hands the socket only checked addresses, so the check happens at connect
 *   time, for every connection, and a DNS answer that changed since the source was created (rebinding) is
 *   caught.
 * - PostgreSQL and MySQL clients take no lookup function, so they are given `pin()`: the name is resolved
 *   and checked first, and the client connects to that checked IP literal (TLS still verifies the name).
 * - IP literals never reach a resolver (Node skips `lookup` for them), so `pin()` and `checkLiteral()` check
 *   them directly before any connection is opened.
 */
export class OutboundGuard {
  readonly allowed: AllowedRanges;
  readonly platform: PlatformEndpoints;
  private readonly resolver: Resolver;
  private readonly treatAsPublic: ReadonlySet<string>;

  constructor(opts: GuardOptions) {
    this.allowed = AllowedRanges.of(opts.allowPrivate);
    this.resolver = opts.resolve ?? systemResolver;
    this.platform = opts.platform instanceof PlatformEndpoints ? opts.platform : new PlatformEndpoints(opts.platform ?? [], { resolve: this.resolver });
    this.treatAsPublic = new Set(opts.treatAsPublic ?? []);
  }

  /** Why an IP address (reached as `name`, when it was) may not be dialled at `port`, or null when it may. */
  reasonFor(address: string, port: number, name?: string): string | null {
    const platform = this.platform.refusal(address, port, name);
    if (platform) return platform;
    if (this.treatAsPublic.has(address) || isAllowedAddress(address, this.allowed)) return null;
    return name && !isIP(name) ? nameRefusal(name, address) : refusal(address);
  }

  /** Throws when `host` is an IP literal that may not be dialled at `port`; names are checked when they resolve. */
  async checkLiteral(host: string, port: number): Promise<void> {
    const h = bareHost(host);
    if (!isIP(h)) return;
    await this.platform.ready();
    const reason = this.reasonFor(h, port);
    if (reason) throw new DisallowedTargetError(reason);
  }

  /** Resolves a host and checks every address at `port`; answers the first one to connect to. */
  async pin(host: string, port: number, timeoutMs: number): Promise<{ address: string; family: 4 | 6 }> {
    const h = bareHost(host);
    const literal = isIP(h);
    if (literal) {
      await this.checkLiteral(h, port);
      return { address: h, family: literal as 4 | 6 };
    }
    const addresses = await this.resolveChecked(h, port, timeoutMs);
    const first = addresses[0]!;
    return { address: first.address, family: first.family as 4 | 6 };
  }

  /** A `lookup` for net/http/tls connections (and the MongoDB driver) to `port` that only yields allowed addresses. */
  lookupFor(port: number): LookupFunction {
    return (hostname, options, callback) => {
      this.resolveChecked(hostname, port, 0).then(
        (addresses) => {
          const wanted = options.family === 4 || options.family === 6 ? addresses.filter((a) => a.family === options.family) : addresses;
          if (!wanted.length) return callback(new HostNotFoundError(hostname), '', 0);
          if (options.all) return callback(null, wanted);
          callback(null, wanted[0]!.address, wanted[0]!.family);
        },
        (err: NodeJS.ErrnoException) => callback(err, '', 0),
      );
    };
  }

  /**
   * A registration-time look at a URL's target (a webhook endpoint): answers why it is refused, or null. A
   * name that does not resolve (yet) is accepted; every connection is checked again either way, so this only
   * turns an obviously refused target into a clear 4xx up front.
   */
  async checkUrl(url: string, timeoutMs = 3_000): Promise<string | null> {
    let host: string;
    let port: number;
    try {
      const u = new URL(url);
      host = hostOf(u);
      port = portOf(u);
    } catch {
      return 'the URL cannot be parsed';
    }
    await this.platform.ready();
    if (isIP(host)) return this.reasonFor(host, port);
    const lower = host.toLowerCase().replace(/\.$/, '');
    if (lower === 'localhost' || lower.endsWith('.localhost')) {
      const reason = this.reasonFor('127.0.0.1', port, host);
      if (reason) return reason.startsWith('the host ') ? `the host ${host} is loopback` : reason;
    }
    let timer: NodeJS.Timeout | undefined;
    try {
      const addresses = await Promise.race([
        this.resolver(host),
        new Promise<[]>((res) => {
          timer = setTimeout(() => res([]), timeoutMs);
        }),
      ]);
      for (const a of addresses) {
        const reason = this.reasonFor(a.address, port, host);
        if (reason) return reason;
      }
      return null;
    } catch {
      return null;
    } finally {
      clearTimeout(timer);
    }
  }

  private async resolveChecked(hostname: string, port: number, timeoutMs: number): Promise<LookupAddress[]> {
    let timer: NodeJS.Timeout | undefined;
    let addresses: LookupAddress[];
    try {
      const lookup = this.resolver(hostname);
      addresses =
        timeoutMs > 0
          ? await Promise.race([
              lookup,
              new Promise<never>((_, reject) => {
                timer = setTimeout(() => reject(Object.assign(new Error(`resolving ${hostname} timed out`), { code: 'ETIMEOUT' })), timeoutMs);
              }),
            ])
          : await lookup;
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'ENODATA' || code === 'EAI_NONAME') throw new HostNotFoundError(hostname);
      throw err;
    } finally {
      clearTimeout(timer);
    }
    if (!addresses.length) throw new HostNotFoundError(hostname);
    await this.platform.ready();
    for (const a of addresses) {
      const reason = this.reasonFor(a.address, port, hostname);
      if (reason) throw new DisallowedTargetError(reason);
    }
    return addresses;
  }
}
