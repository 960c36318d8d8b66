import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/** The parts of one AES-256-GCM sealing; each caller keeps its own stored format of them. */
export interface Sealed {
  /** 96 bits, fresh for every sealing. */
  iv: Buffer;
  ciphertext: Buffer;
  /** 128-bit authentication tag. */
  tag: Buffer;
}

function checkKey(key: Buffer): void {
  if (key.length !== 32) throw new Error('an AES-256-GCM key is 32 bytes');
}

/**
 * AES-256-GCM with a fresh random 96-bit IV. `context` is authenticated, not encrypted: a value sealed for
 * one context (an account and its source, an endpoint) does not open in another.
 */
export function seal(key: Buffer, plaintext: Buffer | string, context: string): Sealed {
  checkKey(key);
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(context, 'utf8'));
  const ciphertext = Buffer.concat([cipher.update(typeof plaintext === 'string' ? Buffer.from(plaintext, 'utf8') : plaintext), cipher.final()]);
  return { iv, ciphertext, tag: cipher.getAuthTag() };
}

/** The plaintext of `seal`; throws when the key, the context or any part is not the one it was sealed with. */
export function open(key: Buffer, sealed: Sealed, context: string): Buffer {
  checkKey(key);
  const decipher = createDecipheriv('aes-256-gcm', key, sealed.iv);
  decipher.setAAD(Buffer.from(context, 'utf8'));
  decipher.setAuthTag(sealed.tag);
  return Buffer.concat([decipher.update(sealed.ciphertext), decipher.final()]);
}
