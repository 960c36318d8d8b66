import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import { isAllowedAddress, nameRefusal, refusal } from './address-class.ts';

/** Resolves a name to every address it has (what `dns.lookup(name, {all: true})` answers). */
export type Resolver = (hostname: string) => Promise<LookupAddress[]>;

export const systemResolver: Resolver = (hostname) =>
  new Promise((resolve, reject) => dnsLookup(hostname, { all: true, verbatim: true }, (err, addresses) => (err ? reject(err) : resolve(addresses))));

/** The target of a connection is not allowed; its message says which address and why, and is safe to show. */
export class DisallowedTargetError extends Error {
  readonly code = 'ERR_DISALLOWED_TARGET';
  constructor(message: string) {
    super(message);
    this.name = 'DisallowedTargetError';
  }
}

export class HostNotFoundError extends Error {
  readonly code = 'ENOTFOUND';
  constructor(host: string) {
    super(`the host ${host} was not found`);
    this.name = 'HostNotFoundError';
  }
}

export interface GuardOptions {
  /** ALLOW_PRIVATE_TARGETS: loopback and private ranges are dialled too (never link-local or cloud metadata). */
  allowPrivate: boolean;
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

/**
 * The SSRF guard for outbound connections (docs/architecture.md, "Webhooks" and "Data sources and analytics"): source pulls and webhook deliveries. The rule: the
 * IP address actually dialled must be public, unless an operator allows private targets.
 *
 * - HTTP(S) and MongoDB dial through `lookup`, a resolver that refuses a name when ANY of its addresses is
 *   not allowed and hands the socket only checked addresses, so the check happens at connect time, for every
 *   connection, and a DNS answer that changed since the source was created (rebinding) is caught.
 * - PostgreSQL and MySQL clients take no lookup function, so they are given `pin()`: the name is resolved
 *   and checked first, and the client connects to that checked IP literal (TLS still verifies the name).
 * - IP literals never reach a resolver (Node skips `lookup` for them), so `pin()` and `checkLiteral()` check
 *   them directly before any connection is opened.
 */
export class OutboundGuard {
  readonly allowPrivate: boolean;
  private readonly resolver: Resolver;
  private readonly treatAsPublic: ReadonlySet<string>;

  constructor(opts: GuardOptions) {
    this.allowPrivate = opts.allowPrivate;
    this.resolver = opts.resolve ?? systemResolver;
    this.treatAsPublic = new Set(opts.treatAsPublic ?? []);
  }

  /** Why an IP address may not be dialled, or null when it may. */
  reasonFor(address: string): string | null {
    if (this.treatAsPublic.has(address)) return null;
    return isAllowedAddress(address, this.allowPrivate) ? null : refusal(address);
  }

  /** Throws when `host` is an IP literal that may not be dialled; names are checked when they resolve. */
  checkLiteral(host: string): void {
    const h = bareHost(host);
    if (!isIP(h)) return;
    const reason = this.reasonFor(h);
    if (reason) throw new DisallowedTargetError(reason);
  }

  /** Resolves a host and checks every address; answers the first one to connect to. */
  async pin(host: string, timeoutMs: number): Promise<{ address: string; family: 4 | 6 }> {
    const h = bareHost(host);
    const literal = isIP(h);
    if (literal) {
      this.checkLiteral(h);
      return { address: h, family: literal as 4 | 6 };
    }
    const addresses = await this.resolveChecked(h, timeoutMs);
    const first = addresses[0]!;
    return { address: first.address, family: first.family as 4 | 6 };
  }

  /** A `lookup` for net/http/tls connections (and the MongoDB driver) that only yields allowed addresses. */
  readonly lookup: LookupFunction = (hostname, options, callback) => {
    this.resolveChecked(hostname, 0).then(
      (addresses) => {
        const wanted = options.family === 4 || options.family === 6 ? addresses.filter((a) => a.family === options.family) : addresses;
        if (!wanted.length) return callback(new HostNotFoundError(hostname), '', 0);
        if (options.all) return callback(null, wanted);
        callback(null, wanted[0]!.address, wanted[0]!.family);
      },
      (err: NodeJS.ErrnoException) => callback(err, '', 0),
    );
  };

  private async resolveChecked(hostname: string, timeoutMs: number): Promise<LookupAddress[]> {
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
    const bad = addresses.find((a) => this.reasonFor(a.address));
    if (bad) throw new DisallowedTargetError(nameRefusal(hostname, bad.address));
    return addresses;
  }
}

/** The guard's connect-time `lookup` alone, for an http(s) agent or request that needs nothing else. */
export function guardedLookup(allowPrivate: boolean): LookupFunction {
  return new OutboundGuard({ allowPrivate }).lookup;
}
