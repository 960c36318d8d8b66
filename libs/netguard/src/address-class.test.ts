import { AllowedRanges, canonicalAddress, classifyAddress, isAllowedAddress, nameRefusal, parseCidr, refusal } from './address-class.ts';

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

  it('never allows link-local or a cloud metadata service, even with private targets allowed', () => {
    expect(classifyAddress('100.100.100.200')).toBe('metadata');
    expect(classifyAddress('fd00:ec2::254')).toBe('metadata');
    expect(classifyAddress('::ffff:100.100.100.200')).toBe('metadata');
    for (const address of ['169.254.169.254', 'fe80::1', '::ffff:169.254.169.254', '100.100.100.200', 'fd00:ec2::254']) {
      expect([address, isAllowedAddress(address, true)]).toEqual([address, false]);
    }
    expect(isAllowedAddress('100.100.100.201', true)).toBe(true);
    expect(isAllowedAddress('fd00:ec2::253', true)).toBe(true);
  });
});

describe('refusal messages', () => {
  it('name the address, the host and the class, and nothing else', () => {
    expect(refusal('10.0.0.1')).toBe('the address 10.0.0.1 is not allowed (private)');
    expect(nameRefusal('db.internal', 'fd00::5')).toBe('the host db.internal resolves to fd00::5, which is not allowed (unique-local)');
  });
});

describe('allowed private ranges', () => {
  it('parses CIDRs and single addresses, and refuses anything else', () => {
    expect(parseCidr('10.0.0.0/8')).toEqual(['10.0.0.0', 8, 'ipv4']);
    expect(parseCidr(' fd00::/8 ')).toEqual(['fd00::', 8, 'ipv6']);
    expect(parseCidr('192.168.1.5')).toEqual(['192.168.1.5', 32, 'ipv4']);
    for (const bad of ['10.0.0.0/33', '::/129', '10.0.0/8', 'example.com/8', '10.0.0.0/8/1', '10.0.0.0/-1', '10.0.0.0/', 'fe80::1%eth0/64', 'true'])
      expect([bad, parseCidr(bad)]).toEqual([bad, null]);
  });

  it('true stands for every loopback, private and unique-local range, including their IPv6 spellings', () => {
    for (const a of ['127.0.0.1', '10.1.1.1', '100.64.0.1', '172.16.0.1', '192.168.0.1', '::1', 'fd00::1', 'fec0::1', '::ffff:10.0.0.1', '2002:c0a8:0101::1', '64:ff9b:1::1']) {
      expect([a, isAllowedAddress(a, true)]).toEqual([a, true]);
    }
  });

  it('a list allows its ranges only, in every spelling of their addresses', () => {
    const ranges = AllowedRanges.of(['192.168.10.0/24']);
    expect(isAllowedAddress('192.168.10.7', ranges)).toBe(true);
    expect(isAllowedAddress('::ffff:192.168.10.7', ranges)).toBe(true);
    expect(isAllowedAddress('2002:c0a8:0a07::1', ranges)).toBe(true);
    expect(isAllowedAddress('192.168.11.7', ranges)).toBe(false);
    expect(isAllowedAddress('10.0.0.1', ranges)).toBe(false);
    expect(isAllowedAddress('8.8.8.8', ranges)).toBe(true);
    expect(isAllowedAddress('169.254.169.254', AllowedRanges.of(['0.0.0.0/0']))).toBe(false);
    expect(() => AllowedRanges.of(['10.0.0.0/40'])).toThrow(/not a CIDR range/);
  });

  it('one spelling per address', () => {
    expect(canonicalAddress('::ffff:7f00:1')).toBe('127.0.0.1');
    expect(canonicalAddress('FD00:0::0001')).toBe('fd00:0:0:0:0:0:0:1');
    expect(canonicalAddress('nope')).toBeNull();
  });
});
