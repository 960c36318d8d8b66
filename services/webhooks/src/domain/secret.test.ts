import { randomBytes } from 'node:crypto';
import { seal } from '@dap/crypto';
import { newWebhookSecret, SecretBox } from './secret.ts';

describe('SecretBox (AES-256-GCM at rest)', () => {
  const key = randomBytes(32);
  const box = new SecretBox(key);

  it('round-trips in libs/crypto sealed form and never stores the plaintext', () => {
    const secret = newWebhookSecret();
    const sealed = box.seal(secret, 'whk_1');
    expect(sealed).not.toContain(secret.slice(6));
    expect(sealed).toMatch(/^v1\.[0-9a-f]{8}\.[\w-]+\.[\w-]+\.[\w-]+$/);
    expect(box.open(sealed, 'whk_1')).toBe(secret);
    expect(box.seal(secret, 'whk_1')).not.toBe(sealed); // fresh IV each time
  });

  it('refuses another endpoint context and another key', () => {
    const sealed = box.seal('whsec_abc', 'whk_1');
    expect(() => box.open(sealed, 'whk_2')).toThrow();
    expect(() => new SecretBox(randomBytes(32)).open(sealed, 'whk_1')).toThrow();
  });

  it('re-seals a secret stored in the legacy layout (v1.<iv>.<tag>.<ciphertext>, base64) and leaves the current form alone', () => {
    const secret = newWebhookSecret();
    const s = seal(key, secret, 'whk_1');
    const legacy = ['v1', s.iv.toString('base64'), s.tag.toString('base64'), s.ciphertext.toString('base64')].join('.');
    expect(() => box.open(legacy, 'whk_1')).toThrow(/known format/);
    const resealed = box.resealLegacy(legacy, 'whk_1')!;
    expect(box.open(resealed, 'whk_1')).toBe(secret);
    expect(box.resealLegacy(resealed, 'whk_1')).toBeNull();
    // A legacy value moved to another endpoint does not open there either.
    expect(() => box.resealLegacy(legacy, 'whk_2')).toThrow();
  });
});
