import { redisConnectionOptions, RedisTargetError } from './index.ts';

describe('redisConnectionOptions', () => {
  it('maps a plain and a TLS URL to one server, with credentials and database', () => {
    expect(redisConnectionOptions('redis://127.0.0.1:16379')).toEqual({ host: '127.0.0.1', port: 16379 });
    expect(redisConnectionOptions('rediss://app:p%40ss@cache.example.internal:6380/2')).toEqual({
      host: 'cache.example.internal',
      port: 6380,
      username: 'app',
      password: 'p@ss',
      db: 2,
      tls: {},
    });
    expect(redisConnectionOptions('redis://:pw@cache')).toEqual({ host: 'cache', port: 6379, password: 'pw' });
  });

  it('maps a redis+sentinel:// URL to the Sentinels, the master name, credentials and database', () => {
    expect(redisConnectionOptions('redis+sentinel://:s3cret@s1.internal:26379,s2.internal,10.0.0.3:26380/mymaster/1')).toEqual({
      sentinels: [
        { host: 's1.internal', port: 26379 },
        { host: 's2.internal', port: 26379 },
        { host: '10.0.0.3', port: 26380 },
      ],
      name: 'mymaster',
      password: 's3cret',
      db: 1,
    });
    expect(redisConnectionOptions({ url: 'rediss+sentinel://s1:26379/prod-cache', sentinelPassword: 'sentinel-pw' })).toEqual({
      sentinels: [{ host: 's1', port: 26379 }],
      name: 'prod-cache',
      sentinelPassword: 'sentinel-pw',
      tls: {},
      sentinelTLS: {},
      enableTLSForSentinelMode: true,
    });
  });

  it('takes the Sentinels and master name from REDIS_SENTINELS and REDIS_SENTINEL_NAME, the rest from the URL', () => {
    expect(redisConnectionOptions({ url: 'redis://:pw@ignored/3', sentinels: ['a:26379', 'b:26379'], sentinelName: 'm' })).toEqual({
      sentinels: [
        { host: 'a', port: 26379 },
        { host: 'b', port: 26379 },
      ],
      name: 'm',
      password: 'pw',
      db: 3,
    });
  });

  it('refuses a malformed Sentinel URL, half a Sentinel setting or another scheme, without echoing the password', () => {
    const message = (t: Parameters<typeof redisConnectionOptions>[0]) => {
      try {
        redisConnectionOptions(t);
        return 'accepted';
      } catch (e) {
        expect(e).toBeInstanceOf(RedisTargetError);
        return (e as Error).message;
      }
    };
    expect(message('redis+sentinel://:hunter2@s1:26379')).toMatch(/^a Sentinel URL looks like/);
    expect(message({ url: 'redis://x', sentinels: ['a:26379'] })).toBe('REDIS_SENTINELS and REDIS_SENTINEL_NAME go together');
    expect(message('http://:hunter2@cache:6379')).toBe('unsupported Redis URL scheme "http:"');
    expect(message('redis+sentinel://:hunter2@s1:26379')).not.toContain('hunter2');
  });
});
