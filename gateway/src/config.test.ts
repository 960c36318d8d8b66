import { limitKeyOf } from './auth/client-address.ts';
import { trustProxy } from './config.ts';

describe('TRUST_PROXY', () => {
  it('trusts no proxy unless told: unset, empty, false and 0 all mean the socket address', () => {
    for (const v of [undefined, '', ' ', 'false', '0']) expect(trustProxy.parse(v)).toBe(false);
  });

  it('takes a hop count, or addresses, CIDR blocks and named ranges', () => {
    expect(trustProxy.parse('1')).toBe(1);
    expect(trustProxy.parse('2')).toBe(2);
    expect(trustProxy.parse('10.0.0.0/8, 192.168.4.7,fd00::/8, loopback')).toEqual(['10.0.0.0/8', '192.168.4.7', 'fd00::/8', 'loopback']);
  });

  it('refuses "trust everyone", a name it does not know, a bad prefix and an absurd hop count', () => {
    for (const v of ['true', 'nginx', '10.0.0.0/33', 'fd00::/129', '10.0.0.0/8/1', '10.0.0.0/8,', '300.1.1.1', '11']) {
      expect(trustProxy.safeParse(v).success).toBe(false);
    }
    expect(trustProxy.safeParse('10.0.0.0/8,nginx').error?.issues[0]?.message).toContain('"nginx"');
  });
});

describe('the address a limit counts against', () => {
  it('is an IPv4 address as is, an IPv4-mapped one as its IPv4 address', () => {
    expect(limitKeyOf('203.0.113.9')).toBe('203.0.113.9');
    expect(limitKeyOf('::ffff:203.0.113.9')).toBe('203.0.113.9');
  });

  it('is the /64 of an IPv6 address, however it is written', () => {
    expect(limitKeyOf('2001:db8:1:2:aaaa::1')).toBe('2001:db8:1:2::/64');
    expect(limitKeyOf('2001:0DB8:0001:0002:ffff:ffff:ffff:fffe')).toBe('2001:db8:1:2::/64');
    expect(limitKeyOf('2001:db8::1')).toBe('2001:db8:0:0::/64');
    expect(limitKeyOf('::1')).toBe('0:0:0:0::/64');
    expect(limitKeyOf('fe80::1%eth0')).toBe('fe80:0:0:0::/64');
    expect(limitKeyOf('2001:db8:1:3::1')).not.toBe(limitKeyOf('2001:db8:1:2::1'));
  });
});
