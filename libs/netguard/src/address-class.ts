import { BlockList, isIPv4, isIPv6 } from 'node:net';

/**
 * Address classes for the SSRF guard (docs/architecture.md, outbound connections): only `public` is dialled
 * unless an operator allows private ranges (ALLOW_PRIVATE_TARGETS: the local stack, or a deployment whose
 * customers' databases sit in a private network), and even then link-local, cloud metadata, unspecified,
 * multicast, broadcast and reserved addresses are refused. Link-local holds the instance metadata service of every large cloud
 * (169.254.169.254, with the machine's credentials) and nothing a data source or a webhook lives on; the
 * metadata services outside it are their own class.
 */
export type AddressClass = 'public' | 'loopback' | 'private' | 'link-local' | 'unique-local' | 'metadata' | 'multicast' | 'unspecified' | 'broadcast' | 'reserved';

const ALLOWED_WHEN_PRIVATE_ALLOWED: ReadonlySet<AddressClass> = new Set(['loopback', 'private', 'unique-local']);

function parseIPv4(s: string): number | null {
  if (!isIPv4(s)) return null;
  const [a, b, c, d] = s.split('.').map(Number) as [number, number, number, number];
  return ((a << 24) >>> 0) + (b << 16) + (c << 8) + d;
}

/** Eight 16-bit groups, or null. Handles `::`, an embedded dotted quad and a zone id. */
function parseIPv6(input: string): number[] | null {
  let s = input.split('%')[0] ?? '';
  if (!isIPv6(s)) return null;
  const lastColon = s.lastIndexOf(':');
  const tail = s.slice(lastColon + 1);
  if (tail.includes('.')) {
    const v4 = parseIPv4(tail);
    if (v4 === null) return null;
    s = `${s.slice(0, lastColon + 1)}${(v4 >>> 16).toString(16)}:${(v4 & 0xffff).toString(16)}`;
  }
  const halves = s.split('::');
  if (halves.length > 2) return null;
  const head = halves[0] ? halves[0].split(':') : [];
  const rest = halves.length === 2 && halves[1] ? halves[1].split(':') : [];
  const fill = halves.length === 2 ? 8 - head.length - rest.length : 0;
  const groups = [...head, ...Array<string>(Math.max(fill, 0)).fill('0'), ...rest].map((g) => parseInt(g, 16));
  return groups.length === 8 && groups.every((g) => g >= 0 && g <= 0xffff) ? groups : null;
}

function inV4(ip: number, base: string, bits: number): boolean {
  const b = parseIPv4(base)!;
  const mask = bits === 0 ? 0 : (0xffffffff << (32 - bits)) >>> 0;
  return (ip & mask) >>> 0 === (b & mask) >>> 0;
}

const V4_RANGES: ReadonlyArray<[string, number, AddressClass]> = [
  ['0.0.0.0', 8, 'unspecified'], // "this network"; 0.0.0.0 dials the local host
  ['10.0.0.0', 8, 'private'],
  ['100.64.0.0', 10, 'private'], // carrier-grade NAT
  ['127.0.0.0', 8, 'loopback'],
  ['169.254.0.0', 16, 'link-local'], // includes cloud metadata at 169.254.169.254
  ['172.16.0.0', 12, 'private'],
  ['192.0.0.0', 24, 'reserved'],
  ['192.0.2.0', 24, 'reserved'], // documentation
  ['192.88.99.0', 24, 'reserved'], // 6to4 relay anycast
  ['192.168.0.0', 16, 'private'],
  ['198.18.0.0', 15, 'reserved'], // benchmarking
  ['198.51.100.0', 24, 'reserved'],
  ['203.0.113.0', 24, 'reserved'],
  ['224.0.0.0', 4, 'multicast'],
  ['255.255.255.255', 32, 'broadcast'],
  ['240.0.0.0', 4, 'reserved'],
];

/** Cloud instance metadata services outside link-local: Alibaba Cloud's (in the carrier-grade NAT range). */
const V4_METADATA = new Set([parseIPv4('100.100.100.200')!]);

function classifyV4(ip: number): AddressClass {
  if (V4_METADATA.has(ip)) return 'metadata';
  for (const [base, bits, cls] of V4_RANGES) if (inV4(ip, base, bits)) return cls;
  return 'public';
}

function classifyV6(g: number[]): AddressClass {
  const [g0, g1, g2, g3, g4, g5, g6, g7] = g as [number, number, number, number, number, number, number, number];
  const embeddedV4 = (hi: number, lo: number) => classifyV4(((hi << 16) >>> 0) + lo);
  if (g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0 && g4 === 0) {
    if (g5 === 0xffff) return embeddedV4(g6, g7); // IPv4-mapped ::ffff:a.b.c.d
    if (g5 === 0 && g6 === 0 && g7 === 0) return 'unspecified';
    if (g5 === 0 && g6 === 0 && g7 === 1) return 'loopback';
    return 'reserved'; // IPv4-compatible and other ::/80 forms
  }
  if (g0 === 0x64 && g1 === 0xff9b && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0) return embeddedV4(g6, g7); // NAT64
  if (g0 === 0x64 && g1 === 0xff9b && g2 === 1) return 'private'; // local-use NAT64
  if (g0 === 0xfd00 && g1 === 0x0ec2 && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0 && g6 === 0 && g7 === 0x254) return 'metadata'; // AWS's IPv6 metadata, fd00:ec2::254
  if ((g0 & 0xfe00) === 0xfc00) return 'unique-local';
  if ((g0 & 0xffc0) === 0xfe80) return 'link-local';
  if ((g0 & 0xffc0) === 0xfec0) return 'private'; // deprecated site-local
  if ((g0 & 0xff00) === 0xff00) return 'multicast';
  if (g0 === 0x2002) return embeddedV4(g1, g2); // 6to4 carries an IPv4 address
  if (g0 === 0x2001 && g1 === 0) return 'reserved'; // Teredo tunnels can reach anything
  if (g0 === 0x2001 && g1 === 0x0db8) return 'reserved'; // documentation
  if (g0 === 0x3fff && g1 < 0x1000) return 'reserved'; // documentation (RFC 9637)
  if ((g0 & 0xe000) === 0x2000) return 'public'; // global unicast 2000::/3
  return 'reserved';
}

/** The class of an IP literal, or null when the string is not an IP address. */
export function classifyAddress(address: string): AddressClass | null {
  const v4 = parseIPv4(address);
  if (v4 !== null) return classifyV4(v4);
  const v6 = parseIPv6(address);
  return v6 ? classifyV6(v6) : null;
}

/**
 * What an operator allows besides public addresses (ALLOW_PRIVATE_TARGETS): nothing (`false`), every
 * loopback, private and unique-local range (`true`), or those of these ranges that a CIDR list covers.
 */
export type PrivateTargets = boolean | readonly string[];

/** The ranges `true` stands for: loopback, RFC 1918, carrier-grade NAT, IPv6 loopback, unique-local, site-local, local NAT64. */
export const PRIVATE_RANGES: readonly string[] = [
  '10.0.0.0/8',
  '100.64.0.0/10',
  '127.0.0.0/8',
  '172.16.0.0/12',
  '192.168.0.0/16',
  '::1/128',
  'fc00::/7',
  'fec0::/10',
  '64:ff9b:1::/48',
];

/** A CIDR (`10.0.0.0/8`, `fd00::/8`) or a single address as [address, prefix length, family], or null. */
export function parseCidr(value: string): [string, number, 'ipv4' | 'ipv6'] | null {
  const [address = '', bits, ...rest] = value.trim().split('/');
  const family = isIPv4(address) ? 'ipv4' : isIPv6(address) && !address.includes('%') ? 'ipv6' : null;
  if (!family || rest.length) return null;
  const max = family === 'ipv4' ? 32 : 128;
  if (bits === undefined) return [address, max, family];
  if (!/^\d{1,3}$/.test(bits) || Number(bits) > max) return null;
  return [address, Number(bits), family];
}

/** The compiled form of a PrivateTargets setting: a matcher over the allowed ranges. */
export class AllowedRanges {
  private readonly list = new BlockList();
  readonly cidrs: readonly string[];

  constructor(cidrs: readonly string[]) {
    this.cidrs = cidrs;
    for (const c of cidrs) {
      const parsed = parseCidr(c);
      if (!parsed) throw new TypeError(`not a CIDR range: ${JSON.stringify(c)}`);
      this.list.addSubnet(...parsed);
    }
  }

  static of(setting: PrivateTargets): AllowedRanges {
    return new AllowedRanges(setting === true ? PRIVATE_RANGES : setting === false ? [] : setting);
  }

  /** IPv4-mapped addresses match IPv4 ranges; NAT64 and 6to4 addresses match by the IPv4 address they carry. */
  covers(address: string): boolean {
    const bare = address.split('%')[0] ?? '';
    if (isIPv4(bare)) return this.list.check(bare, 'ipv4');
    if (!isIPv6(bare)) return false;
    if (this.list.check(bare, 'ipv6')) return true;
    const v4 = embeddedV4(bare);
    return v4 !== null && this.list.check(v4, 'ipv4');
  }
}

/**
 * One spelling per address, to compare two: IPv4 as is, an IPv4-mapped IPv6 address as its IPv4 address,
 * other IPv6 addresses as eight lower-case hex groups without a zone. Null for what is not an address.
 */
export function canonicalAddress(address: string): string | null {
  if (isIPv4(address)) return address;
  const g = parseIPv6(address);
  if (!g) return null;
  if (g.slice(0, 5).every((x) => x === 0) && g[5] === 0xffff) return embeddedV4(address);
  return g.map((x) => x.toString(16)).join(':');
}

/** The IPv4 address an IPv6 address carries (mapped, NAT64 or 6to4), as a dotted quad, or null. */
export function embeddedV4(address: string): string | null {
  const g = parseIPv6(address);
  if (!g) return null;
  const quad = (hi: number, lo: number) => `${hi >> 8}.${hi & 0xff}.${lo >> 8}.${lo & 0xff}`;
  if (g[0] === 0 && g[1] === 0 && g[2] === 0 && g[3] === 0 && g[4] === 0 && g[5] === 0xffff) return quad(g[6]!, g[7]!);
  if (g[0] === 0x64 && g[1] === 0xff9b && g[2] === 0 && g[3] === 0 && g[4] === 0 && g[5] === 0) return quad(g[6]!, g[7]!);
  if (g[0] === 0x2002) return quad(g[1]!, g[2]!);
  return null;
}

/** Public addresses always; loopback, private and unique-local ones only inside the ranges the operator allows. */
export function isAllowedAddress(address: string, allow: PrivateTargets | AllowedRanges): boolean {
  const cls = classifyAddress(address);
  if (!cls) return false;
  if (cls === 'public') return true;
  if (!ALLOWED_WHEN_PRIVATE_ALLOWED.has(cls)) return false;
  const ranges = allow instanceof AllowedRanges ? allow : allow === true ? ALL_PRIVATE : allow === false ? null : AllowedRanges.of(allow);
  return ranges !== null && ranges.covers(address);
}

const ALL_PRIVATE = AllowedRanges.of(true);

export function refusal(address: string): string {
  return `the address ${address} is not allowed (${classifyAddress(address) ?? 'invalid'})`;
}

/** Why a name may not be dialled, given the address of it that is refused. */
export function nameRefusal(host: string, address: string): string {
  return `the host ${host} resolves to ${address}, which is not allowed (${classifyAddress(address) ?? 'invalid'})`;
}
