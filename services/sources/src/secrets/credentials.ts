import { createHash } from 'node:crypto';
import { z } from 'zod';
import { open, seal } from '@dap/crypto';

const HEX_KEY = /^[0-9a-fA-F]{64}$/;
const B64_KEY = /^[A-Za-z0-9+/_-]{43}=?$/;

/** A 32-byte key from 64 hex characters or base64 (standard or URL-safe), or null. */
export function decodeCredentialsKey(text: string): Buffer | null {
  const s = text.trim();
  if (HEX_KEY.test(s)) return Buffer.from(s, 'hex');
  if (!B64_KEY.test(s)) return null;
  const key = Buffer.from(s.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
  return key.length === 32 ? key : null;
}

/** Config piece: the key is parsed once at start-up; the message never repeats the value. */
export const credentialsKeySchema = z.string().transform((s, ctx) => {
  const key = decodeCredentialsKey(s);
  if (!key) {
    ctx.addIssue({ code: 'custom', message: 'must be 32 bytes, as base64 or as 64 hex characters' });
    return z.NEVER;
  }
  return key;
});

export class CredentialsError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CredentialsError';
  }
}

const VERSION = 'v1';
const b64 = (b: Buffer) => b.toString('base64url');

/**
 * AES-256-GCM for the connection details of remote sources. Each value gets a fresh 96-bit IV, and the
 * additional data binds it to its account and source, so a ciphertext copied onto another source does not
 * open there. The key id (a hash prefix, not the key) tells which key sealed a value, ready for rotation.
 * Stored form: `v1.<keyId>.<iv>.<ciphertext>.<tag>`, base64url parts.
 */
export class CredentialCipher {
  private readonly key: Buffer;
  readonly keyId: string;

  constructor(key: Buffer) {
    if (key.length !== 32) throw new Error('the credentials key must be 32 bytes');
    this.key = Buffer.from(key);
    this.keyId = createHash('sha256').update('dap-source-credentials\0').update(key).digest('hex').slice(0, 8);
  }

  seal(value: unknown, context: string): string {
    const { iv, ciphertext, tag } = seal(this.key, JSON.stringify(value), context);
    return [VERSION, this.keyId, b64(iv), b64(ciphertext), b64(tag)].join('.');
  }

  open(sealed: string, context: string): unknown {
    const parts = sealed.split('.');
    if (parts.length !== 5 || parts[0] !== VERSION) throw new CredentialsError('the stored credentials are not in a known format');
    const [, keyId, iv, ct, tag] = parts as [string, string, string, string, string];
    if (keyId !== this.keyId) throw new CredentialsError('the stored credentials were sealed with another key (SOURCE_CREDENTIALS_KEY changed)');
    try {
      const plain = open(this.key, { iv: Buffer.from(iv, 'base64url'), ciphertext: Buffer.from(ct, 'base64url'), tag: Buffer.from(tag, 'base64url') }, context);
      return JSON.parse(plain.toString('utf8'));
    } catch {
      throw new CredentialsError('the stored credentials could not be decrypted');
    }
  }
}

/** The additional authenticated data that ties sealed credentials to one source of one account. */
export const credentialsContext = (accountId: string, sourceId: string) => `dap-source:${accountId}:${sourceId}`;
