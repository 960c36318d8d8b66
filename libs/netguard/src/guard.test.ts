import { tableResolver } from './dns-table.ts';
import { DisallowedTargetError, hostOf, HostNotFoundError, OutboundGuard } from './guard.ts';

const dns = tableResolver({
  'public.example': ['93.184.216.34'],
  'mixed.example': ['93.184.216.34', '10.0.0.7'],
  'internal.example': ['192.168.1.20'],
  'metadata.example': ['169.254.169.254'],
  'v6.example': ['2606:4700:4700::1111'],
  'v6private.example': ['fd00::5'],
});
const strict = new OutboundGuard({ allowPrivate: false, resolve: dns });
const local = new OutboundGuard({ allowPrivate: true, resolve: dns });

function lookup(guard: OutboundGuard, host: string, opts: { all?: boolean; family?: number } = {}): Promise<unknown> {
  return new Promise((resolve, reject) => guard.lookupFor(443)(host, opts as never, (err: Error | null, address: unknown) => (err ? reject(err) : resolve(address))));
}

describe('OutboundGuard with ALLOW_PRIVATE_TARGETS=false', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['10.1.2.3', 'private'],
    ['172.20.0.1', 'private'],
    ['192.168.0.10', 'private'],
    ['169.254.169.254', 'link-local'],
    ['::1', 'loopback'],
    ['[::1]', 'loopback'],
    ['fc00::', 'unique-local'],
    ['fe80::', 'link-local'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['[::ffff:7f00:1]', 'loopback'],
    ['0.0.0.0', 'unspecified'],
  ])('refuses the literal %s (%s) before connecting', async (host, cls) => {
    await expect(strict.checkLiteral(host, 443)).rejects.toThrow(DisallowedTargetError);
    await expect(strict.pin(host, 443, 1_000)).rejects.toThrow(new RegExp(`not allowed \\(${cls}\\)`));
  });

  it('refuses a name that resolves privately, even when only one of its addresses is private', async () => {
    await expect(strict.pin('internal.example', 443, 1_000)).rejects.toThrow(/internal\.example resolves to 192\.168\.1\.20, which is not allowed \(private\)/);
    await expect(strict.pin('mixed.example', 443, 1_000)).rejects.toThrow(/10\.0\.0\.7/);
    await expect(strict.pin('metadata.example', 443, 1_000)).rejects.toThrow(/link-local/);
    await expect(strict.pin('v6private.example', 443, 1_000)).rejects.toThrow(/unique-local/);
    await expect(lookup(strict, 'internal.example')).rejects.toBeInstanceOf(DisallowedTargetError);
    await expect(strict.pin('internal.example', 443, 1_000)).rejects.toMatchObject({ name: 'DisallowedTargetError', code: 'ERR_DISALLOWED_TARGET' });
  });

  it('refuses localhost through the real resolver', async () => {
    await expect(new OutboundGuard({ allowPrivate: false }).pin('localhost', 443, 2_000)).rejects.toThrow(/the host localhost resolves to \S+, which is not allowed \(loopback\)/);
  });

  it('pins a public name to its checked address, and the lookup hands out only checked addresses', async () => {
    expect(await strict.pin('public.example', 443, 1_000)).toEqual({ address: '93.184.216.34', family: 4 });
    expect(await strict.pin('8.8.8.8', 443, 1_000)).toEqual({ address: '8.8.8.8', family: 4 });
    expect(await lookup(strict, 'public.example')).toBe('93.184.216.34');
    expect(await lookup(strict, 'v6.example', { all: true })).toEqual([{ address: '2606:4700:4700::1111', family: 6 }]);
    await expect(lookup(strict, 'public.example', { family: 6 })).rejects.toBeInstanceOf(HostNotFoundError);
  });

  it('checks again at connect time: a name that rebinds to a private address after the check is refused', async () => {
    let answer = '93.184.216.34';
    const rebinding = new OutboundGuard({ allowPrivate: false, resolve: async () => [{ address: answer, family: 4 }] });
    expect(await rebinding.pin('rebind.example', 443, 1_000)).toEqual({ address: '93.184.216.34', family: 4 });
    answer = '127.0.0.1';
    await expect(lookup(rebinding, 'rebind.example')).rejects.toThrow(/not allowed \(loopback\)/);
  });

  it('reports an unknown host and a resolver that hangs', async () => {
    await expect(strict.pin('nope.example', 443, 1_000)).rejects.toBeInstanceOf(HostNotFoundError);
    await expect(strict.pin('nope.example', 443, 1_000)).rejects.toMatchObject({
      name: 'HostNotFoundError',
      code: 'ENOTFOUND',
      message: 'the host nope.example was not found',
    });
    const hanging = new OutboundGuard({ allowPrivate: false, resolve: () => new Promise(() => undefined) });
    await expect(hanging.pin('slow.example', 443, 50)).rejects.toThrow(/timed out/);
  });
});

describe('OutboundGuard with ALLOW_PRIVATE_TARGETS=true', () => {
  it('allows loopback and private ranges, but never link-local, metadata, unspecified, multicast or reserved addresses', async () => {
    for (const host of ['127.0.0.1', '::1', '10.0.0.1', 'fc00::1', 'internal.example']) await expect(local.pin(host, 443, 1_000)).resolves.toBeDefined();
    for (const host of ['169.254.169.254', 'fe80::1', '100.100.100.200', '0.0.0.0', '224.0.0.1', '192.0.2.1'])
      await expect(local.checkLiteral(host, 443)).rejects.toThrow(DisallowedTargetError);
    await expect(local.pin('metadata.example', 443, 1_000)).rejects.toThrow(/link-local/);
  });
});

describe('lookupFor (a lookup for an http agent)', () => {
  const lookupOnce = (allowPrivate: boolean, host: string, all: boolean) =>
    new Promise<{ err: (Error & { code?: string }) | null; result: unknown }>((resolve) =>
      new OutboundGuard({ allowPrivate }).lookupFor(80)(host, { all }, (err, address) => resolve({ err, result: address })),
    );
  it('refuses a name that resolves to loopback unless private targets are allowed', async () => {
    const refused = await lookupOnce(false, 'localhost', false);
    expect(refused.err?.code).toBe('ERR_DISALLOWED_TARGET');
    const allowed = await lookupOnce(true, 'localhost', true);
    expect(allowed.err).toBeNull();
    expect(Array.isArray(allowed.result)).toBe(true);
  });
});

describe('hostOf', () => {
  it('strips the brackets of an IPv6 host and keeps names and IPv4 as they are', () => {
    expect(hostOf(new URL('https://[::ffff:7f00:1]:8443/x'))).toBe('::ffff:7f00:1');
    expect(hostOf(new URL('http://Example.COM/x'))).toBe('example.com');
    expect(hostOf(new URL('http://2130706433/'))).toBe('127.0.0.1');
  });
});
