import { createHash } from 'node:crypto';
import { z } from 'zod';
import { ReasonedError } from '@dap/errors';
import { open, seal } from './aead.ts';

const HEX_KEY = /^[0-9a-fA-F]{64}$/;
const B64_KEY = /^[A-Za-z0-9+/_-]{43}=?$/;

/** A 32-byte key from 64 hex characters or base64 (standard or URL-safe), or null. */
export function decodeKey(text: string): Buffer | null {
  const s = text.trim();
  if (HEX_KEY.test(s)) return Buffer.from(s, 'hex');
  if (!B64_KEY.test(s)) return null;
  const key = Buffer.from(s.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
  return key.length === 32 ? key : null;
}

/** Config piece for a sealing key: parsed once at start-up; the message never repeats the value. */
export const keySchema = z.string().transform((s, ctx) => {
  const key = decodeKey(s);
  if (!key) {
    ctx.addIssue({ code: 'custom', message: 'must be 32 bytes, as base64 or as 64 hex characters' });
    return z.NEVER;
  }
  return key;
});

export type SealFailure = 'format' | 'key' | 'auth';

/** Why a sealed value did not open: not this format, sealed under another key, or altered / another context. */
export class SealError extends ReasonedError<SealFailure> {
  override name = 'SealError';
}

const VERSION = 'v1';
const b64 = (b: Buffer) => b.toString('base64url');

/**
 * The one stored form of a sealed value: `v1.<keyId>.<iv>.<ciphertext>.<tag>`, base64url parts, AES-256-GCM
 * with a fresh 96-bit IV. `context` is authenticated, so a value copied onto another record does not open
 * there. The key id (a hash prefix of the purpose and the key, never the key) tells which key sealed a value,
 * so a changed key is reported as such rather than as tampering.
 */
export class SealedBox {
  readonly #key: Buffer;
  readonly keyId: string;

  constructor(key: Buffer, purpose: string) {
    if (key.length !== 32) throw new Error('a sealing key is 32 bytes');
    this.#key = Buffer.from(key);
    this.keyId = createHash('sha256').update(`${purpose}\0`).update(key).digest('hex').slice(0, 8);
  }

  seal(plaintext: Buffer | string, context: string): string {
    const { iv, ciphertext, tag } = seal(this.#key, plaintext, context);
    return [VERSION, this.keyId, b64(iv), b64(ciphertext), b64(tag)].join('.');
  }

  open(sealed: string, context: string): Buffer {
    const parts = sealed.split('.');
    if (parts.length !== 5 || parts[0] !== VERSION) throw new SealError('format', 'the sealed value is not in a known format');
    const [, keyId, iv, ciphertext, tag] = parts as [string, string, string, string, string];
    if (keyId !== this.keyId) throw new SealError('key', 'the value was sealed with another key');
    try {
      return open(this.#key, { iv: Buffer.from(iv, 'base64url'), ciphertext: Buffer.from(ciphertext, 'base64url'), tag: Buffer.from(tag, 'base64url') }, context);
    } catch {
      throw new SealError('auth', 'the sealed value could not be decrypted');
    }
  }
}
