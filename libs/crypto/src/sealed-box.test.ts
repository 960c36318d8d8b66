import { randomBytes } from 'node:crypto';
import { decodeKey, keySchema, SealedBox, SealError } from './sealed-box.ts';

const key = randomBytes(32);

describe('decodeKey / keySchema', () => {
  it('accepts 32 bytes as base64, URL-safe base64 or 64 hex characters', () => {
    expect(decodeKey(key.toString('base64'))).toEqual(key);
    expect(decodeKey(key.toString('base64url'))).toEqual(key);
    expect(decodeKey(key.toString('hex'))).toEqual(key);
    expect(decodeKey(` ${key.toString('hex').toUpperCase()}\n`)).toEqual(key);
    expect(keySchema.parse(key.toString('base64'))).toEqual(key);
  });

  it('refuses other lengths and encodings, without repeating the value in the message', () => {
    for (const bad of [randomBytes(16).toString('base64'), randomBytes(31).toString('hex'), 'not a key', '', randomBytes(33).toString('base64')]) {
      expect(decodeKey(bad)).toBeNull();
    }
    const secret = randomBytes(20).toString('hex');
    const parsed = keySchema.safeParse(secret);
    expect(parsed.success).toBe(false);
    const message = parsed.error!.issues.map((i) => i.message).join(' ');
    expect(message).toBe('must be 32 bytes, as base64 or as 64 hex characters');
    expect(message).not.toContain(secret);
  });
});

describe('SealedBox (AES-256-GCM, one stored form)', () => {
  const box = new SealedBox(key, 'test-purpose');

  it('round-trips, in the form v1.<keyId>.<iv>.<ciphertext>.<tag>, never in clear, with a fresh IV each time', () => {
    const sealed = box.seal('p@ss:word', 'acct_A:src_1');
    expect(sealed).toMatch(/^v1\.[0-9a-f]{8}\.[\w-]{16}\.[\w-]+\.[\w-]{22}$/);
    expect(sealed.split('.')[1]).toBe(box.keyId);
    expect(Buffer.from(sealed.split('.')[3]!, 'base64url').toString('latin1')).not.toContain('p@ss');
    expect(box.open(sealed, 'acct_A:src_1').toString('utf8')).toBe('p@ss:word');
    expect(box.seal('p@ss:word', 'acct_A:src_1')).not.toBe(sealed);
  });

  it('names the failure: another context or a tampered part (auth), another key (key), not this format (format)', () => {
    const sealed = box.seal('value', 'ctx-1');
    const reason = (f: () => unknown) => {
      try {
        f();
      } catch (err) {
        return err instanceof SealError ? err.reason : 'other';
      }
      return 'opened';
    };
    expect(reason(() => box.open(sealed, 'ctx-1'))).toBe('opened');
    expect(reason(() => box.open(sealed, 'ctx-2'))).toBe('auth');
    const parts = sealed.split('.');
    const ct = Buffer.from(parts[3]!, 'base64url');
    ct[0] = ct[0]! ^ 1;
    expect(reason(() => box.open([...parts.slice(0, 3), ct.toString('base64url'), parts[4]].join('.'), 'ctx-1'))).toBe('auth');
    expect(reason(() => new SealedBox(randomBytes(32), 'test-purpose').open(sealed, 'ctx-1'))).toBe('key');
    // The same key for another purpose has another key id: values do not cross between uses.
    expect(reason(() => new SealedBox(key, 'other-purpose').open(sealed, 'ctx-1'))).toBe('key');
    expect(reason(() => box.open('garbage', 'ctx-1'))).toBe('format');
    expect(reason(() => box.open('v1.a.b.c', 'ctx-1'))).toBe('format');
    expect(() => box.open('garbage', 'ctx-1')).toThrow(expect.objectContaining({ name: 'SealError', reason: 'format', message: 'the sealed value is not in a known format' }));
  });

  it('refuses a key that is not 32 bytes', () => {
    expect(() => new SealedBox(randomBytes(16), 'p')).toThrow(/32 bytes/);
  });
});
