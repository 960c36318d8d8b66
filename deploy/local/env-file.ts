import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';

/** Reads KEY=value lines as compose reads .env: comments, blanks and anything else without a KEY= are skipped. */
export function parseEnv(text: string): Record<string, string> {
  return Object.fromEntries(
    text
      .split('\n')
      .filter((l) => /^[A-Za-z_][A-Za-z0-9_]*=/.test(l))
      .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
  );
}

/** An env file's variables; none when it does not exist (yet). */
export function readEnvFile(file: string): Record<string, string> {
  return existsSync(file) ? parseEnv(readFileSync(file, 'utf8')) : {};
}

const SECRETS = { INTERNAL_SECRET: 'hex', WEBHOOK_SECRET_KEY: 'base64', SOURCE_CREDENTIALS_KEY: 'base64' } as const;

/** New process secrets for a local stack or a test system: the internal secret (hex) and the two 32-byte keys (base64). */
export function freshSecrets(): Record<keyof typeof SECRETS, string> {
  return Object.fromEntries(Object.entries(SECRETS).map(([k, enc]) => [k, randomBytes(32).toString(enc)])) as Record<keyof typeof SECRETS, string>;
}

/**
 * A local stack's secrets, generated once into `file` (owner-only, in the git-ignored .local folder) and read
 * from it afterwards; generated afresh when one is missing.
 */
export function localSecrets(file: string): Record<keyof typeof SECRETS, string> {
  const kept = readEnvFile(file);
  const names = Object.keys(SECRETS) as (keyof typeof SECRETS)[];
  if (names.every((k) => kept[k])) return kept as Record<keyof typeof SECRETS, string>;
  const fresh = freshSecrets();
  writeFileSync(file, names.map((k) => `${k}=${fresh[k]}\n`).join(''), { mode: 0o600 });
  return fresh;
}
