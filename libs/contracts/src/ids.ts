import { decodeTime, encodeTime, monotonicFactory } from 'ulid';
import { z } from 'zod';

/** Every id is a known prefix plus a ULID, so ids are self-describing and sort by creation time. */
export const ID_PREFIXES = ['acct', 'key', 'src', 'rpt', 'mdl', 'whk', 'evt', 'msg', 'req', 'usr', 'sess', 'prd', 'pwr', 'ins', 'dsh', 'til'] as const;
export type IdPrefix = (typeof ID_PREFIXES)[number];

const ULID = '[0-9A-HJKMNP-TV-Z]{26}';
/**
 * ulid's own PRNG asks the OS for one byte per character (16 crypto calls per id, a measurable share of the
 * gateway's CPU per request); this one hands out bytes of a pooled crypto-random buffer instead. byte / 256 is
 * uniform over ulid's 32 symbols (256 = 8 × 32). Web Crypto (global in Node and browsers), so the dashboard's
 * type check, which reads this file through the contracts' types, needs no Node types.
 */
const pool = new Uint8Array(4096);
let poolAt = pool.length;
export function pooledRandom(): number {
  if (poolAt === pool.length) {
    crypto.getRandomValues(pool);
    poolAt = 0;
  }
  return pool[poolAt++]! / 256;
}

const nextUlid = monotonicFactory(pooledRandom);

export function newId<P extends IdPrefix>(prefix: P): `${P}_${string}` {
  return `${prefix}_${nextUlid()}`;
}

export function isId(prefix: IdPrefix, value: unknown): value is string {
  return typeof value === 'string' && new RegExp(`^${prefix}_${ULID}$`).test(value);
}

/** `a` or `an` before a word, by its first letter ("an integer", "a string", "an acct_ id"). */
export function withArticle(word: string): string {
  return `${/^[aeiou]/i.test(word) ? 'an' : 'a'} ${word}`;
}

export function idSchema(prefix: IdPrefix) {
  return z.string().regex(new RegExp(`^${prefix}_${ULID}$`), `must be ${withArticle(`${prefix}_`)} id`);
}

/** The smallest id of this prefix made at or after `at`: ids sort by time, so `id >= idFloor(p, t)` means "since t". */
export function idFloor<P extends IdPrefix>(prefix: P, at: Date): `${P}_${string}` {
  return `${prefix}_${encodeTime(Math.max(0, at.getTime()), 10)}${'0'.repeat(16)}`;
}

/** When an id was made (the millisecond of its ULID). */
export function idTime(id: string): Date {
  return new Date(decodeTime(id.slice(id.indexOf('_') + 1, id.indexOf('_') + 27)));
}
