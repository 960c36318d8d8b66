import { randomBytes } from 'node:crypto';
import { newWebhookSecret, SecretBox } from './secret.ts';

describe('SecretBox (AES-256-GCM at rest)', () => {
  const box = new SecretBox(randomBytes(32));

  it('round-trips and never stores the plaintext', () => {
    const secret = newWebhookSecret();
    const sealed = box.seal(secret, 'whk_1');
    expect(sealed).not.toContain(secret.slice(6));
    expect(sealed.startsWith('v1.')).toBe(true);
    expect(box.open(sealed, 'whk_1')).toBe(secret);
    expect(box.seal(secret, 'whk_1')).not.toBe(sealed); // fresh IV each time
  });

  it('refuses another endpoint context, a tampered ciphertext and another key', () => {
    const sealed = box.seal('whsec_abc', 'whk_1');
    expect(() => box.open(sealed, 'whk_2')).toThrow();
    const parts = sealed.split('.');
    const data = Buffer.from(parts[3]!, 'base64');
    data[0] = data[0]! ^ 1;
    expect(() => box.open([parts[0], parts[1], parts[2], data.toString('base64')].join('.'), 'whk_1')).toThrow();
    expect(() => new SecretBox(randomBytes(32)).open(sealed, 'whk_1')).toThrow();
  });
});
