import { hash, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * API keys look like `dap_sk_<30 base62 random><6 base62 CRC32 checksum>`: the prefix lets secret scanners
 * spot a leaked key, the checksum lets us refuse a mistyped key without a database lookup.
 */
export const KEY_PREFIX = 'dap_sk_';
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const RANDOM_LEN = 30;
const CHECKSUM_LEN = 6;
const KEY_PATTERN = new RegExp(`^${KEY_PREFIX}[0-9A-Za-z]{${RANDOM_LEN + CHECKSUM_LEN}}$`);

const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

function crc32(s: string): number {
  let c = 0xffffffff;
  for (const b of Buffer.from(s, 'utf8')) c = CRC_TABLE[(c ^ b) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function base62(n: number, width: number): string {
  let out = '';
  for (let i = 0; i < width; i++) {
    out = BASE62[n % 62] + out;
    n = Math.floor(n / 62);
  }
  return out;
}

function randomBase62(len: number): string {
  // Rejection sampling keeps every character uniformly likely.
  let out = '';
  while (out.length < len) {
    for (const b of randomBytes(len * 2)) {
      if (b < 248 && out.length < len) out += BASE62[b % 62];
    }
  }
  return out;
}

export function generateApiKey(): string {
  const random = randomBase62(RANDOM_LEN);
  return `${KEY_PREFIX}${random}${base62(crc32(random), CHECKSUM_LEN)}`;
}

/** Shape and checksum only; says nothing about whether the key exists. */
export function isWellFormedApiKey(key: string): boolean {
  if (!KEY_PATTERN.test(key)) return false;
  const body = key.slice(KEY_PREFIX.length);
  const expected = Buffer.from(base62(crc32(body.slice(0, RANDOM_LEN)), CHECKSUM_LEN));
  return timingSafeEqual(expected, Buffer.from(body.slice(RANDOM_LEN)));
}

/** Keys are stored only as SHA-256; the key itself is shown once, at creation. */
export function hashApiKey(key: string): string {
  // One-shot: the gateway hashes the key of every request, and a Hash object costs twice the digest.
  return hash('sha256', key, 'hex');
}

export function keyHint(key: string): string {
  return `${KEY_PREFIX}…${key.slice(-4)}`;
}
