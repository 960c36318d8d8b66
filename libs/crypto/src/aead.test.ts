import { randomBytes } from 'node:crypto';
import { open, seal } from './aead.ts';

describe('AES-256-GCM sealing', () => {
  const key = randomBytes(32);

  it('opens what it sealed, with a fresh IV each time', () => {
    const a = seal(key, 'the secret', 'ctx');
    const b = seal(key, 'the secret', 'ctx');
    expect(a.iv.equals(b.iv)).toBe(false);
    expect(a.ciphertext.toString('utf8')).not.toContain('secret');
    expect(open(key, a, 'ctx').toString('utf8')).toBe('the secret');
  });

  it('refuses another context, another key, a tampered ciphertext or tag, and a key of the wrong size', () => {
    const s = seal(key, Buffer.from('payload'), 'acct_1:src_1');
    expect(() => open(key, s, 'acct_1:src_2')).toThrow();
    expect(() => open(randomBytes(32), s, 'acct_1:src_1')).toThrow();
    const flipped = Buffer.from(s.ciphertext);
    flipped[0] = flipped[0]! ^ 1;
    expect(() => open(key, { ...s, ciphertext: flipped }, 'acct_1:src_1')).toThrow();
    expect(() => open(key, { ...s, tag: randomBytes(16) }, 'acct_1:src_1')).toThrow();
    expect(() => seal(randomBytes(16), 'x', 'c')).toThrow(/32 bytes/);
  });
});
