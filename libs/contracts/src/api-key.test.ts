import { createHash } from 'node:crypto';
import { generateApiKey, hashApiKey, isWellFormedApiKey, keyHint, KEY_PREFIX } from './api-key.ts';

describe('api keys', () => {
  it('generates well-formed, distinct keys with the scanner-friendly prefix', () => {
    const keys = new Set(Array.from({ length: 200 }, generateApiKey));
    expect(keys.size).toBe(200);
    for (const k of keys) {
      expect(k.startsWith(KEY_PREFIX)).toBe(true);
      expect(k).toHaveLength(KEY_PREFIX.length + 36);
      expect(isWellFormedApiKey(k)).toBe(true);
    }
  });

  it('refuses a key whose checksum does not match (one character changed)', () => {
    const k = generateApiKey();
    const i = KEY_PREFIX.length + 3;
    const swapped = k.slice(0, i) + (k[i] === 'a' ? 'b' : 'a') + k.slice(i + 1);
    expect(isWellFormedApiKey(swapped)).toBe(false);
    expect(isWellFormedApiKey('dap_sk_short')).toBe(false);
    expect(isWellFormedApiKey('Bearer x')).toBe(false);
  });

  it('hashes with SHA-256 and hints with the last four characters only', () => {
    const k = generateApiKey();
    expect(hashApiKey(k)).toMatch(/^[0-9a-f]{64}$/);
    // The same hex digest as the Hash object that made the stored hashes.
    expect(hashApiKey('dap_sk_test')).toBe(createHash('sha256').update('dap_sk_test').digest('hex'));
    expect(hashApiKey(k)).not.toContain(k.slice(KEY_PREFIX.length, KEY_PREFIX.length + 8));
    expect(keyHint(k)).toBe(`${KEY_PREFIX}…${k.slice(-4)}`);
  });
});
