import { SealedBox, SealError } from '@dap/crypto';

export class CredentialsError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CredentialsError';
  }
}

const FAILURES = {
  format: 'the stored credentials are not in a known format',
  key: 'the stored credentials were sealed with another key (SOURCE_CREDENTIALS_KEY changed)',
  auth: 'the stored credentials could not be decrypted',
} as const;

/**
 * The connection details of remote sources, sealed at rest (libs/crypto's one stored form). The context
 * binds each value to its account and source, so a ciphertext copied onto another source does not open.
 */
export class CredentialCipher {
  readonly #box: SealedBox;

  constructor(key: Buffer) {
    this.#box = new SealedBox(key, 'dap-source-credentials');
  }

  get keyId(): string {
    return this.#box.keyId;
  }

  seal(value: unknown, context: string): string {
    return this.#box.seal(JSON.stringify(value), context);
  }

  open(sealed: string, context: string): unknown {
    try {
      return JSON.parse(this.#box.open(sealed, context).toString('utf8'));
    } catch (err) {
      throw new CredentialsError(err instanceof SealError ? FAILURES[err.reason] : FAILURES.auth);
    }
  }
}

/** The additional authenticated data that ties sealed credentials to one source of one account. */
export const credentialsContext = (accountId: string, sourceId: string) => `dap-source:${accountId}:${sourceId}`;
