import { lookupAddresses } from './dns-table.ts';
import { OutboundGuard, type Resolver } from './guard.ts';

const checkTarget = (url: string, allowPrivate: boolean, resolve?: Resolver, timeoutMs?: number) =>
  new OutboundGuard({ allowPrivate, ...(resolve ? { resolve } : {}) }).checkUrl(url, timeoutMs);

describe('registration check (checkUrl)', () => {
  const resolveTo = (addresses: string[]) => async () => lookupAddresses(addresses);

  it('refuses private IP literals, including bracketed and mapped IPv6 and numeric IPv4 forms', async () => {
    expect(await checkTarget('http://127.0.0.1:8080/x', false)).toMatch(/loopback/);
    expect(await checkTarget('https://[::1]/x', false)).toMatch(/loopback/);
    expect(await checkTarget('https://[::ffff:7f00:1]/x', false)).toMatch(/loopback/);
    expect(await checkTarget('http://2130706433/', false)).toMatch(/loopback/); // WHATWG URL makes this 127.0.0.1
    expect(await checkTarget('http://0x0a.0.0.1/', false)).toMatch(/private/);
    expect(await checkTarget('http://169.254.169.254/latest/meta-data', false)).toMatch(/link-local/);
  });

  it('refuses names that resolve to a private address, and localhost', async () => {
    expect(await checkTarget('https://internal.example/x', false, resolveTo(['93.184.216.34', '10.0.0.5']))).toBe(
      'the host internal.example resolves to 10.0.0.5, which is not allowed (private)',
    );
    expect(await checkTarget('http://localhost:3000/', false, resolveTo(['93.184.216.34']))).toMatch(/loopback/);
  });

  it('accepts public targets and, with private targets allowed, loopback', async () => {
    expect(await checkTarget('https://8.8.8.8/hook', false)).toBeNull();
    expect(await checkTarget('https://hooks.example/x', false, resolveTo(['93.184.216.34']))).toBeNull();
    expect(await checkTarget('http://127.0.0.1:9/x', true)).toBeNull();
    expect(await checkTarget('http://localhost:9/x', true)).toBeNull();
  });

  it('refuses link-local and cloud metadata even with private targets allowed, literal or by name', async () => {
    expect(await checkTarget('http://169.254.169.254/latest/meta-data', true)).toMatch(/link-local/);
    expect(await checkTarget('http://[fd00:ec2::254]/latest', true)).toMatch(/metadata/);
    expect(await checkTarget('http://metadata.internal/x', true, resolveTo(['169.254.169.254']))).toBe(
      'the host metadata.internal resolves to 169.254.169.254, which is not allowed (link-local)',
    );
  });

  it('accepts a name that does not resolve (connect time checks again)', async () => {
    expect(
      await checkTarget('https://not-yet.example/x', false, async () => {
        throw Object.assign(new Error('nx'), { code: 'ENOTFOUND' });
      }),
    ).toBeNull();
  });

  it('accepts a name whose resolver hangs past the timeout (connect time checks again)', async () => {
    expect(await checkTarget('https://slow.example/x', false, () => new Promise(() => undefined), 20)).toBeNull();
  });
});
