import { randomBytes } from 'node:crypto';
import { open, SealedBox } from '@dap/crypto';

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

/** The layout endpoints' secrets were sealed in before libs/crypto's one form: `v1.<iv>.<tag>.<ciphertext>`, base64. */
const LEGACY = /^v1\.([A-Za-z0-9+/=]+)\.([A-Za-z0-9+/=]+)\.([A-Za-z0-9+/=]*)$/;

/**
 * Endpoint signing secrets at rest, in libs/crypto's sealed form. The endpoint id is authenticated data, so a
 * sealed secret copied onto another endpoint does not open.
 */
export class SecretBox {
  readonly #key: Buffer;
  readonly #box: SealedBox;

  constructor(key: Buffer) {
    this.#key = Buffer.from(key);
    this.#box = new SealedBox(key, 'dap-webhook-secrets');
  }

  seal(plaintext: string, endpointId: string): string {
    return this.#box.seal(plaintext, endpointId);
  }

  open(sealed: string, endpointId: string): string {
    return this.#box.open(sealed, endpointId).toString('utf8');
  }

  /**
   * The same secret in today's form when `sealed` is in the legacy layout, or null when it is not. Used once
   * at start-up to re-seal stored endpoints (EndpointRepository.resealLegacySecrets), so only one form is read.
   */
  resealLegacy(sealed: string, endpointId: string): string | null {
    const m = LEGACY.exec(sealed);
    if (!m) return null;
    const plain = open(this.#key, { iv: Buffer.from(m[1]!, 'base64'), tag: Buffer.from(m[2]!, 'base64'), ciphertext: Buffer.from(m[3]!, 'base64') }, endpointId);
    return this.seal(plain.toString('utf8'), endpointId);
  }
}
