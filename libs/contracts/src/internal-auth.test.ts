import { signCallerContext, verifyCallerContext, internalServiceToken, isInternalServiceToken } from './internal-auth.ts';

const secret = 'a'.repeat(40);
const ctx = { accountId: 'acct_01J0000000000000000000000A', plan: 'starter' as const, scopes: ['sources:read' as const], requestId: 'req_1', issuedAt: Date.now() };

describe('gateway-signed caller context', () => {
  it('round-trips a context signed with the shared secret', () => {
    const { context, signature } = signCallerContext(secret, ctx);
    expect(verifyCallerContext(secret, context, signature)).toEqual(ctx);
  });

  it('refuses a wrong secret, a tampered context, a missing header and a stale signature', () => {
    const { context, signature } = signCallerContext(secret, ctx);
    expect(verifyCallerContext('b'.repeat(40), context, signature)).toBeNull();
    const tampered = Buffer.from(JSON.stringify({ ...ctx, accountId: 'acct_01J0000000000000000000000B' })).toString('base64url');
    expect(verifyCallerContext(secret, tampered, signature)).toBeNull();
    expect(verifyCallerContext(secret, context, undefined)).toBeNull();
    expect(verifyCallerContext(secret, context, signature, Date.now() + 10 * 60_000)).toBeNull();
  });

  it('checks the internal service token in constant time and refuses others', () => {
    expect(isInternalServiceToken(secret, internalServiceToken(secret))).toBe(true);
    expect(isInternalServiceToken(secret, internalServiceToken('c'.repeat(40)))).toBe(false);
    expect(isInternalServiceToken(secret, undefined)).toBe(false);
  });
});
