import { isIP } from 'node:net';
import type { Request } from 'express';

/**
 * The address the per-address limits count against: `req.ip`, which Express takes from behind the proxies
 * TRUST_PROXY names (config.ts) and from the socket otherwise. An IPv4-mapped IPv6 address counts as its IPv4
 * address, and an IPv6 address as its /64, the block one subscriber holds: a client must not escape a limit by
 * moving to the next address of its own network.
 */
export function clientAddressOf(req: Request): string {
  return limitKeyOf(req.ip ?? req.socket.remoteAddress ?? 'unknown');
}

export function limitKeyOf(address: string): string {
  if (isIP(address) !== 6) return address;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped && isIP(mapped[1]!) === 4) return mapped[1]!;
  const groups = expandIpv6(address.split('%')[0]!);
  return `${groups.slice(0, 4).join(':')}::/64`;
}

/** The eight 16-bit groups of a valid IPv6 address, lower-case hex without leading zeros. */
function expandIpv6(address: string): string[] {
  let text = address.toLowerCase();
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.split('::') as [string, string | undefined];
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const middle = tail === undefined ? [] : Array<string>(8 - left.length - right.length).fill('0');
  return [...left, ...middle, ...right].map((g) => parseInt(g, 16).toString(16));
}
