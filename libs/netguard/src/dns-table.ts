import type { LookupAddress } from 'node:dns';
import type { Resolver } from './guard.ts';

/** Addresses as `dns.lookup(name, { all: true })` gives them, the family read from the text. */
export function lookupAddresses(addresses: string[]): LookupAddress[] {
  return addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
}

/**
 * A resolver answering from a fixed table of names (compared case-insensitively, as DNS does) for the tests
 * of the guard; an unknown name fails as the system resolver does (ENOTFOUND). `calls` records the names asked.
 */
export function tableResolver(table: Record<string, string[]>, calls: string[] = []): Resolver {
  return async (host) => {
    calls.push(host);
    const found = table[host.toLowerCase()];
    if (!found) throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
    return lookupAddresses(found);
  };
}
