import { INTERNAL_TOKEN_HEADER } from '@dap/contracts';

/**
 * Asks the accounts service about a credential by its hash (the credential itself never leaves the gateway):
 * POST /internal/{keys|sessions}/verify with the internal token. Anything but a 2xx throws, so the caller
 * answers 503 rather than taking the credential as unknown.
 */
export async function verifyWithAccounts<T>(accountsUrl: string, token: string, what: 'key' | 'session', hash: string): Promise<T> {
  const res = await fetch(`${accountsUrl}/internal/${what}s/verify`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', [INTERNAL_TOKEN_HEADER]: token },
    body: JSON.stringify({ hash }),
    signal: AbortSignal.timeout(5_000),
  });
  if (!res.ok) throw new Error(`accounts answered ${res.status} to a ${what} verification`);
  return (await res.json()) as T;
}

/** Asks accounts about many keys at once (POST /internal/keys/verify-many): one outcome per hash, in order. */
export async function verifyManyWithAccounts<T>(accountsUrl: string, token: string, hashes: readonly string[]): Promise<T[]> {
  const res = await fetch(`${accountsUrl}/internal/keys/verify-many`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', [INTERNAL_TOKEN_HEADER]: token },
    body: JSON.stringify({ hashes }),
    signal: AbortSignal.timeout(5_000),
  });
  if (!res.ok) throw new Error(`accounts answered ${res.status} to a verification of ${hashes.length} keys`);
  const { outcomes } = (await res.json()) as { outcomes: T[] };
  if (outcomes?.length !== hashes.length) throw new Error(`accounts answered ${outcomes?.length} outcomes for ${hashes.length} keys`);
  return outcomes;
}
