import { isFinalConnectFailure } from './remote-errors.ts';

const sysErr = (code: string) => Object.assign(new Error(code), { code });

describe('isFinalConnectFailure', () => {
  it.each(['ECONNREFUSED', 'ENOTFOUND', 'EHOSTUNREACH', 'ENETUNREACH', 'ERR_DISALLOWED_TARGET', 'ERR_SSL_WRONG_VERSION_NUMBER', 'DEPTH_ZERO_SELF_SIGNED_CERT'])(
    'is final for %s, also as the cause of a driver error',
    (code) => {
      expect(isFinalConnectFailure(sysErr(code))).toBe(true);
      expect(isFinalConnectFailure(new Error('connection 1 to 127.0.0.1:1 closed', { cause: sysErr(code) }))).toBe(true);
    },
  );

  it.each(['ETIMEDOUT', 'ECONNRESET', 'EPIPE', 'EAI_AGAIN'])('is not final for %s, which a retry may get past', (code) => {
    expect(isFinalConnectFailure(sysErr(code))).toBe(false);
    expect(isFinalConnectFailure(new Error('wrapped', { cause: sysErr(code) }))).toBe(false);
  });

  it('is not final for an error without a network code, and stops at a cycle', () => {
    expect(isFinalConnectFailure(new Error('auth failed'))).toBe(false);
    const loop = new Error('loop') as Error & { cause?: unknown };
    loop.cause = loop;
    expect(isFinalConnectFailure(loop)).toBe(false);
  });
});
