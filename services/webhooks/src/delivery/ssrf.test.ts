import { checkTarget, classifyAddress, guardedLookup, isAllowedAddress } from './ssrf.ts';

describe('SSRF address classifier', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['100.64.0.1', 'private'],
    ['169.254.169.254', 'link-local'],
    ['0.0.0.0', 'unspecified'],
    ['224.0.0.1', 'multicast'],
    ['255.255.255.255', 'broadcast'],
    ['240.0.0.1', 'reserved'],
    ['192.0.2.10', 'reserved'],
    ['::1', 'loopback'],
    ['::', 'unspecified'],
    ['fc00::1', 'unique-local'],
    ['fd12:3456::1', 'unique-local'],
    ['fe80::1', 'link-local'],
    ['fe80::1%eth0', 'link-local'],
    ['ff02::1', 'multicast'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['::ffff:10.0.0.1', 'private'],
    ['64:ff9b::a9fe:a9fe', 'link-local'],
    ['2002:c0a8:0101::1', 'private'],
    ['::127.0.0.1', 'reserved'],
    ['2001:db8::1', 'reserved'],
    ['8.8.8.8', 'public'],
    ['1.1.1.1', 'public'],
    ['172.32.0.1', 'public'],
    ['2606:4700:4700::1111', 'public'],
    ['::ffff:8.8.8.8', 'public'],
  ])('%s is %s', (address, cls) => {
    expect(classifyAddress(address)).toBe(cls);
  });

  it('answers null for what is not an address', () => {
    expect(classifyAddress('example.com')).toBeNull();
    expect(classifyAddress('1.2.3')).toBeNull();
  });

  it.each(['127.0.0.1', '10.0.0.1', '172.16.5.4', '192.168.0.10', '169.254.169.254', '::1', 'fc00::', 'fe80::', '::ffff:127.0.0.1', '0.0.0.0'])(
    'refuses %s by default',
    (address) => {
      expect(isAllowedAddress(address, false)).toBe(false);
    },
  );

  it('allows a public address', () => {
    expect(isAllowedAddress('8.8.8.8', false)).toBe(true);
  });

  it('allows loopback and private only when the operator allows private targets, never unspecified or multicast', () => {
    expect(isAllowedAddress('127.0.0.1', true)).toBe(true);
    expect(isAllowedAddress('10.0.0.1', true)).toBe(true);
    expect(isAllowedAddress('::1', true)).toBe(true);
    expect(isAllowedAddress('0.0.0.0', true)).toBe(false);
    expect(isAllowedAddress('224.0.0.1', true)).toBe(false);
  });
});

describe('registration check', () => {
  const resolveTo = (addresses: string[]) => async () => addresses;

  it('refuses private IP literals, including bracketed and mapped IPv6 and numeric IPv4 forms', async () => {
    expect(await checkTarget('http://127.0.0.1:8080/x', false)).toMatch(/loopback/);
    expect(await checkTarget('https://[::1]/x', false)).toMatch(/loopback/);
    expect(await checkTarget('https://[::ffff:7f00:1]/x', false)).toMatch(/loopback/);
    expect(await checkTarget('http://2130706433/', false)).toMatch(/loopback/); // WHATWG URL makes this 127.0.0.1
    expect(await checkTarget('http://0x0a.0.0.1/', false)).toMatch(/private/);
    expect(await checkTarget('http://169.254.169.254/latest/meta-data', false)).toMatch(/link-local/);
  });

  it('refuses names that resolve to a private address, and localhost', async () => {
    expect(await checkTarget('https://internal.example/x', false, resolveTo(['93.184.216.34', '10.0.0.5']))).toMatch(/10\.0\.0\.5/);
    expect(await checkTarget('http://localhost:3000/', false, resolveTo(['93.184.216.34']))).toMatch(/loopback/);
  });

  it('accepts public targets and, with private targets allowed, loopback', async () => {
    expect(await checkTarget('https://8.8.8.8/hook', false)).toBeNull();
    expect(await checkTarget('https://hooks.example/x', false, resolveTo(['93.184.216.34']))).toBeNull();
    expect(await checkTarget('http://127.0.0.1:9/x', true)).toBeNull();
    expect(await checkTarget('http://localhost:9/x', true)).toBeNull();
  });

  it('accepts a name that does not resolve (connect time checks again)', async () => {
    expect(
      await checkTarget('https://not-yet.example/x', false, async () => {
        throw Object.assign(new Error('nx'), { code: 'ENOTFOUND' });
      }),
    ).toBeNull();
  });
});

describe('connect-time lookup', () => {
  const lookupOnce = (allowPrivate: boolean, host: string, all: boolean) =>
    new Promise<{ err: (Error & { code?: string }) | null; result: unknown }>((resolve) =>
      guardedLookup(allowPrivate)(host, { all }, (err, address) => resolve({ err, result: address })),
    );

  it('refuses a name that resolves to loopback unless private targets are allowed', async () => {
    const refused = await lookupOnce(false, 'localhost', false);
    expect(refused.err?.code).toBe('ERR_DISALLOWED_TARGET');
    const allowed = await lookupOnce(true, 'localhost', true);
    expect(allowed.err).toBeNull();
    expect(Array.isArray(allowed.result)).toBe(true);
  });
});
