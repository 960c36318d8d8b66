import { randomBytes } from 'node:crypto';
import { CredentialCipher, CredentialsError, credentialsContext } from './credentials.ts';

const key = randomBytes(32);
const spec = { host: 'db.example.com', user: 'reader', password: 'p@ss:word/with?chars' };

describe('CredentialCipher (AES-256-GCM)', () => {
  const cipher = new CredentialCipher(key);
  const ctx = credentialsContext('acct_A', 'src_1');

  it('round-trips a value and never stores it in clear', () => {
    const sealed = cipher.seal(spec, ctx);
    expect(sealed).toMatch(/^v1\.[0-9a-f]{8}\.[\w-]+\.[\w-]+\.[\w-]+$/);
    expect(sealed).not.toContain('p@ss');
    expect(Buffer.from(sealed.split('.')[3]!, 'base64url').toString('latin1')).not.toContain('reader');
    expect(cipher.open(sealed, ctx)).toEqual(spec);
  });

  it('uses a fresh IV every time', () => {
    expect(cipher.seal(spec, ctx)).not.toBe(cipher.seal(spec, ctx));
  });

  it('refuses a value moved to another source or account, a tampered one and one sealed with another key', () => {
    const sealed = cipher.seal(spec, ctx);
    expect(() => cipher.open(sealed, credentialsContext('acct_A', 'src_2'))).toThrow(CredentialsError);
    expect(() => cipher.open(sealed, credentialsContext('acct_B', 'src_1'))).toThrow(CredentialsError);
    const parts = sealed.split('.');
    const ct = Buffer.from(parts[3]!, 'base64url');
    ct[0] = ct[0]! ^ 1;
    parts[3] = ct.toString('base64url');
    expect(() => cipher.open(parts.join('.'), ctx)).toThrow(/could not be decrypted/);
    expect(() => new CredentialCipher(randomBytes(32)).open(sealed, ctx)).toThrow(/another key/);
    expect(() => cipher.open('garbage', ctx)).toThrow(/not in a known format/);
  });
});
