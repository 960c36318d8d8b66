import { tableResolver } from './dns-table.ts';
import { DisallowedTargetError, OutboundGuard } from './guard.ts';
import { PlatformEndpoints } from './platform-endpoints.ts';

const dns = tableResolver({
  mongo: ['10.96.0.10'],
  'mongo.dap.svc.cluster.local': ['10.96.0.10'],
  'customer-db.example': ['10.20.0.5'],
  'sneaky.example': ['10.20.0.5', '10.96.0.10'],
  'loop.example': ['127.0.0.1'],
  localhost: ['::1', '127.0.0.1'],
  'lan.example': ['192.168.7.20'],
});
/** This machine: loopback, a LAN address and an IPv6 one. */
const interfaces = () => ['127.0.0.1', '::1', '192.168.7.20', 'fd00:1::20'];
const platform = () =>
  new PlatformEndpoints(
    [
      { host: '127.0.0.1', port: 27117 }, // the platform's MongoDB on this machine
      { host: 'localhost', port: 16379 }, // its Redis
      { host: '0.0.0.0', port: 8092 }, // a service bound to every interface
      { host: 'mongo', port: 27017 }, // a MongoDB elsewhere, by name
      { host: '10.0.5.5', port: 9092 }, // a Kafka broker elsewhere
    ],
    { resolve: dns, interfaces },
  );
const guard = (allowPrivate: boolean | string[]) => new OutboundGuard({ allowPrivate, resolve: dns, platform: platform() });

describe("the platform's own endpoints", () => {
  it('refuses them whatever the private ranges allow, in any spelling of this machine, and allows other ports (positive control)', async () => {
    const g = guard(true);
    for (const host of ['127.0.0.1', '127.0.0.2', '::1', '::ffff:127.0.0.1', '0:0:0:0:0:ffff:7f00:1', '192.168.7.20', 'fd00:1::20', '[::1]']) {
      await expect(g.checkLiteral(host, 27117)).rejects.toThrow(DisallowedTargetError);
      await expect(g.checkLiteral(host, 27118)).resolves.toBeUndefined();
    }
    await expect(g.pin('127.0.0.1', 27117, 1_000)).rejects.toThrow("the target 127.0.0.1:27117 is one of this platform's own endpoints, which sources and webhooks may not reach");
    await expect(g.pin('localhost', 16379, 1_000)).rejects.toThrow(/localhost:16379 \(\S+\) is one of this platform's own endpoints/);
    await expect(g.pin('loop.example', 8092, 1_000)).rejects.toThrow(/loop\.example:8092 \(127\.0\.0\.1\)/);
    await expect(g.pin('lan.example', 8092, 1_000)).rejects.toThrow(/own endpoints/);
    expect(await g.pin('loop.example', 8093, 1_000)).toEqual({ address: '127.0.0.1', family: 4 });
  });

  it('refuses an endpoint elsewhere by its name, by another name for its address, and by the address', async () => {
    const g = guard(['10.0.0.0/8']);
    await expect(g.pin('mongo', 27017, 1_000)).rejects.toThrow(/mongo:27017 \(10\.96\.0\.10\) is one of this platform's own endpoints/);
    await expect(g.pin('MONGO.dap.svc.cluster.local', 27017, 1_000)).rejects.toThrow(/own endpoints/);
    await expect(g.pin('10.96.0.10', 27017, 1_000)).rejects.toThrow(/own endpoints/);
    await expect(g.pin('[::ffff:10.0.5.5]', 9092, 1_000)).rejects.toThrow(/own endpoints/);
    await expect(g.pin('sneaky.example', 27017, 1_000)).rejects.toThrow(/sneaky\.example:27017 \(10\.96\.0\.10\)/);
    // The same addresses at other ports, and a customer's database in the allowed range, are fine.
    expect(await g.pin('customer-db.example', 27017, 1_000)).toEqual({ address: '10.20.0.5', family: 4 });
    expect(await g.pin('10.96.0.10', 5432, 1_000)).toEqual({ address: '10.96.0.10', family: 4 });
  });

  it('refuses them in the connect-time lookup and in the registration check of a URL', async () => {
    const g = guard(true);
    const looked = await new Promise<Error | null>((resolve) => g.lookupFor(27017)('mongo', { all: true }, (err) => resolve(err)));
    expect(looked).toBeInstanceOf(DisallowedTargetError);
    const fine = await new Promise<Error | null>((resolve) => g.lookupFor(27018)('mongo', { all: true }, (err) => resolve(err)));
    expect(fine).toBeNull();
    expect(await g.checkUrl('http://127.0.0.1:8092/v1/sources')).toMatch(/127\.0\.0\.1:8092 is one of this platform's own endpoints/);
    expect(await g.checkUrl('http://localhost:16379/')).toMatch(/own endpoints/);
    expect(await g.checkUrl('http://[::1]:8092/')).toMatch(/own endpoints/);
    expect(await g.checkUrl('http://mongo:27017/')).toMatch(/own endpoints/);
    expect(await g.checkUrl('http://127.0.0.1:9999/hook')).toBeNull();
  });

  it('takes an endpoint added once the process listens (its own port)', async () => {
    const g = guard(true);
    await expect(g.checkLiteral('127.0.0.1', 40123)).resolves.toBeUndefined();
    g.platform.add({ host: '127.0.0.1', port: 40123 });
    await expect(g.checkLiteral('127.0.0.1', 40123)).rejects.toThrow(/own endpoints/);
    expect(g.platform.describe()).toEqual(['127.0.0.1:27117', 'localhost:16379', '0.0.0.0:8092', 'mongo:27017', '10.0.5.5:9092', '127.0.0.1:40123']);
    expect(new PlatformEndpoints([{ host: '[::1]', port: 1 }], { resolve: dns }).describe()).toEqual(['[::1]:1']);
  });

  it('resolves names first, then again in the background once a minute, and keeps the last answer when a name stops resolving', async () => {
    const settle = () => new Promise((r) => setImmediate(r));
    let now = 0;
    const calls: string[] = [];
    const table: Record<string, string[]> = { kafka: ['10.1.1.1'] };
    const p = new PlatformEndpoints([{ host: 'kafka', port: 9092 }], { resolve: tableResolver(table, calls), interfaces: () => [], now: () => now });
    await p.ready();
    expect(p.refusal('10.1.1.1', 9092)).not.toBeNull();
    table.kafka = ['10.1.1.2'];
    now += 59_000;
    await p.ready();
    expect(calls).toEqual(['kafka']);
    now += 2_000;
    await p.ready();
    expect(calls).toEqual(['kafka', 'kafka']);
    await settle();
    expect([p.refusal('10.1.1.1', 9092), p.refusal('10.1.1.2', 9092)]).toEqual([null, expect.stringMatching(/own endpoints/)]);
    delete table.kafka;
    now += 61_000;
    await p.ready();
    await settle();
    expect(calls).toEqual(['kafka', 'kafka', 'kafka']);
    expect(p.refusal('10.1.1.2', 9092)).toMatch(/own endpoints/);
  });
});

describe('ALLOW_PRIVATE_TARGETS as a list of ranges', () => {
  it('allows only the listed private ranges, never link-local or metadata even when listed', async () => {
    const g = new OutboundGuard({ allowPrivate: ['10.20.0.0/16', 'fd00:1::/32', '169.254.0.0/16'], resolve: dns });
    expect(await g.pin('10.20.3.4', 5432, 1_000)).toEqual({ address: '10.20.3.4', family: 4 });
    expect(await g.pin('::ffff:10.20.3.4', 5432, 1_000)).toEqual({ address: '::ffff:10.20.3.4', family: 6 });
    expect(await g.pin('fd00:1::9', 5432, 1_000)).toEqual({ address: 'fd00:1::9', family: 6 });
    expect(await g.pin('8.8.8.8', 5432, 1_000)).toEqual({ address: '8.8.8.8', family: 4 });
    await expect(g.pin('10.21.0.1', 5432, 1_000)).rejects.toThrow('the address 10.21.0.1 is not allowed (private)');
    await expect(g.pin('127.0.0.1', 5432, 1_000)).rejects.toThrow(/loopback/);
    await expect(g.pin('lan.example', 5432, 1_000)).rejects.toThrow(/lan\.example resolves to 192\.168\.7\.20, which is not allowed \(private\)/);
    await expect(g.pin('169.254.169.254', 80, 1_000)).rejects.toThrow(/link-local/);
    expect(await g.checkUrl('http://localhost:9/x')).toBe('the host localhost is loopback');
  });
});
