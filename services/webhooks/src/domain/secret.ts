import { randomBytes } from 'node:crypto';
import { open, seal } from '@dap/crypto';

const SECRET_PREFIX = 'whsec_';

/** A Standard Webhooks secret: `whsec_` + base64 of 32 random bytes. */
export function newWebhookSecret(): string {
  return SECRET_PREFIX + randomBytes(32).toString('base64');
}

/** The HMAC key inside a `whsec_` secret. */
export function secretKeyOf(secret: string): Buffer {
  const b64 = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret;
  const key = Buffer.from(b64, 'base64');
  if (key.length === 0) throw new Error('empty webhook secret');
  return key;
}

/**
 * Seals endpoint secrets at rest with AES-256-GCM. The endpoint id is authenticated data, so a sealed
 * secret copied onto another endpoint does not open.
 */
export class SecretBox {
  readonly #key: Buffer;

  constructor(key: Buffer) {
    if (key.length !== 32) throw new Error('the secret key must be 32 bytes');
    this.#key = Buffer.from(key);
  }

  seal(plaintext: string, context: string): string {
    const { iv, ciphertext, tag } = seal(this.#key, plaintext, context);
    return ['v1', iv.toString('base64'), tag.toString('base64'), ciphertext.toString('base64')].join('.');
  }

  open(sealed: string, context: string): string {
    const [version, iv, tag, data] = sealed.split('.');
    if (version !== 'v1' || !iv || !tag || data === undefined) throw new Error('unknown sealed secret format');
    return open(this.#key, { iv: Buffer.from(iv, 'base64'), ciphertext: Buffer.from(data, 'base64'), tag: Buffer.from(tag, 'base64') }, context).toString('utf8');
  }
}
