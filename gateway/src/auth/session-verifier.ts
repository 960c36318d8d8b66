import { createHash } from 'node:crypto';
import { internalServiceToken, type VerifiedSession } from '@dap/contracts';
import { verifyWithAccounts } from './accounts-verify.ts';

const TTL_MS = 5_000;
const MAX_ENTRIES = 50_000;

/**
 * Verifies dashboard session cookies with the accounts service (only the cookie's hash leaves the gateway),
 * caching briefly: a logout reaches every instance within the TTL.
 */
export class SessionVerifier {
  private readonly cache = new Map<string, { session: VerifiedSession | null; until: number }>();
  private readonly accountsUrl: string;
  private readonly token: string;

  constructor(opts: { accountsUrl: string; internalSecret: string }) {
    this.accountsUrl = opts.accountsUrl;
    this.token = internalServiceToken(opts.internalSecret);
  }

  async verify(cookieValue: string, now = Date.now()): Promise<VerifiedSession | null> {
    if (!/^[A-Za-z0-9_-]{20,100}$/.test(cookieValue)) return null;
    const hash = createHash('sha256').update(cookieValue).digest('hex');
    const hit = this.cache.get(hash);
    if (hit && hit.until > now) return hit.session;
    const body = await verifyWithAccounts<{ ok: boolean; session?: VerifiedSession }>(this.accountsUrl, this.token, 'session', hash);
    const session = body.ok && body.session ? body.session : null;
    if (this.cache.size >= MAX_ENTRIES) this.cache.clear();
    this.cache.set(hash, { session, until: now + TTL_MS });
    return session;
  }

  forget(cookieValue: string): void {
    this.cache.delete(createHash('sha256').update(cookieValue).digest('hex'));
  }
}
