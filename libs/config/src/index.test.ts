import {
  ConfigError,
  kafkaConfig,
  kafkaSettingsOf,
  loadConfig,
  mongoConfig,
  outboundConfig,
  platformEndpointsOf,
  redisConfig,
  redisTargetOf,
  serviceConfigShape,
  uploadConfig,
} from './index.ts';

const base = { KAFKA_BROKERS: 'k1:9092, k2:9092', KAFKA_CLIENT_ID: 'svc' };
const service = { ...base, PORT: '8080', MONGO_URL: 'mongodb://db:27017', INTERNAL_SECRET: 'x'.repeat(32) };

describe('start-up period', () => {
  it('is 30 s unless STARTUP_TIMEOUT_MS says otherwise, for every service and for the Kafka and Mongo pieces alone', () => {
    expect(loadConfig(serviceConfigShape('sources'), service).STARTUP_TIMEOUT_MS).toBe(30_000);
    expect(loadConfig(serviceConfigShape('sources'), { ...service, STARTUP_TIMEOUT_MS: '90000' }).STARTUP_TIMEOUT_MS).toBe(90_000);
    expect(loadConfig(kafkaConfig, { ...base, STARTUP_TIMEOUT_MS: '5000' }).STARTUP_TIMEOUT_MS).toBe(5_000);
    expect(loadConfig(mongoConfig, { MONGO_URL: 'mongodb://db', MONGO_DB: 'd', STARTUP_TIMEOUT_MS: '0' }).STARTUP_TIMEOUT_MS).toBe(0);
  });

  it('refuses a negative, fractional or absurd period', () => {
    for (const v of ['-1', '1.5', 'soon', '3600000']) {
      expect(() => loadConfig(serviceConfigShape('sources'), { ...service, STARTUP_TIMEOUT_MS: v })).toThrow(/STARTUP_TIMEOUT_MS/);
    }
  });
});

describe('size limits', () => {
  it('take 1 KiB to 1 TiB in whole bytes, 2 GiB for an upload unless UPLOAD_LIMIT_BYTES says otherwise', () => {
    expect(loadConfig(uploadConfig, {}).UPLOAD_LIMIT_BYTES).toBe(2 * 1024 ** 3);
    expect(loadConfig(uploadConfig, { UPLOAD_LIMIT_BYTES: '1024' }).UPLOAD_LIMIT_BYTES).toBe(1024);
    expect(loadConfig(uploadConfig, { UPLOAD_LIMIT_BYTES: String(1024 ** 4) }).UPLOAD_LIMIT_BYTES).toBe(1024 ** 4);
    for (const v of ['1023', String(1024 ** 4 + 1), '1.5', 'lots']) {
      expect(() => loadConfig(uploadConfig, { UPLOAD_LIMIT_BYTES: v })).toThrow(/UPLOAD_LIMIT_BYTES/);
    }
  });
});

describe('Kafka TLS and SASL', () => {
  it('defaults to plaintext without SASL', () => {
    expect(kafkaSettingsOf(loadConfig(kafkaConfig, base))).toEqual({
      brokers: ['k1:9092', 'k2:9092'],
      clientId: 'svc',
      topicPrefix: '',
      ssl: false,
      sasl: undefined,
      topics: { events: { partitions: 12 }, deadLetters: { partitions: 3 } },
      startupTimeoutMs: 30_000,
    });
  });

  it.each([
    ['plain', 'KAFKA_SSL=true'],
    ['scram-sha-256', 'KAFKA_SSL=1'],
    ['scram-sha-512', 'KAFKA_SSL=false'],
  ] as const)('maps SASL %s and %s', (mechanism, ssl) => {
    const env = { ...base, [ssl.split('=')[0]!]: ssl.split('=')[1], KAFKA_SASL_MECHANISM: mechanism, KAFKA_SASL_USERNAME: 'svc-user', KAFKA_SASL_PASSWORD: 'pa$$ word' };
    const s = kafkaSettingsOf(loadConfig(kafkaConfig, env));
    expect(s.ssl).toBe(ssl.endsWith('true') || ssl.endsWith('1'));
    expect(s.sasl).toEqual({ mechanism, username: 'svc-user', password: 'pa$$ word' });
  });

  it('reads an empty variable (KEY= in a .env file or a manifest) as unset', () => {
    const s = kafkaSettingsOf(loadConfig(kafkaConfig, { ...base, KAFKA_SSL: '', KAFKA_SASL_MECHANISM: '', KAFKA_SASL_USERNAME: '', KAFKA_SASL_PASSWORD: '' }));
    expect(s.ssl).toBe(false);
    expect(s.sasl).toBeUndefined();
  });

  it('fails start-up, naming the variables, on an incomplete or unknown SASL setting, without echoing the password', () => {
    const fail = (env: Record<string, string>) => {
      try {
        loadConfig(serviceConfigShape('models'), { ...service, ...env });
      } catch (err) {
        expect(err).toBeInstanceOf(ConfigError);
        return (err as Error).message;
      }
      throw new Error('expected a ConfigError');
    };
    expect(fail({ KAFKA_SASL_MECHANISM: 'plain', KAFKA_SASL_USERNAME: 'u' })).toBe('invalid configuration:\n  KAFKA_SASL_PASSWORD: required when KAFKA_SASL_MECHANISM is set');
    const orphan = fail({ KAFKA_SASL_USERNAME: 'u', KAFKA_SASL_PASSWORD: 'topsecret-pw' });
    expect(orphan).toContain('KAFKA_SASL_USERNAME: set KAFKA_SASL_MECHANISM too');
    expect(orphan).toContain('KAFKA_SASL_PASSWORD: set KAFKA_SASL_MECHANISM too');
    expect(orphan).not.toContain('topsecret-pw');
    expect(fail({ KAFKA_SASL_MECHANISM: 'gssapi', KAFKA_SASL_USERNAME: 'u', KAFKA_SASL_PASSWORD: 'topsecret-pw' })).toMatch(/^invalid configuration:\n {2}KAFKA_SASL_MECHANISM: /);
    expect(fail({ KAFKA_SSL: 'yes' })).toMatch(/KAFKA_SSL/);
  });

  it('refuses a hand-built config with a mechanism and no credentials', () => {
    expect(() => kafkaSettingsOf({ KAFKA_BROKERS: ['k'], KAFKA_CLIENT_ID: 'c', KAFKA_TOPIC_PREFIX: '', KAFKA_SASL_MECHANISM: 'plain' })).toThrow(ConfigError);
  });
});

describe('outbound targets', () => {
  const outbound = (env: Record<string, string>) => loadConfig(outboundConfig, env);

  it('reads ALLOW_PRIVATE_TARGETS as false, true or a CIDR list, and refuses anything else with every bad entry named', () => {
    expect(outbound({}).ALLOW_PRIVATE_TARGETS).toBe(false);
    expect(outbound({ ALLOW_PRIVATE_TARGETS: '' }).ALLOW_PRIVATE_TARGETS).toBe(false);
    expect(outbound({ ALLOW_PRIVATE_TARGETS: '0' }).ALLOW_PRIVATE_TARGETS).toBe(false);
    expect(outbound({ ALLOW_PRIVATE_TARGETS: 'TRUE' }).ALLOW_PRIVATE_TARGETS).toBe(true);
    expect(outbound({ ALLOW_PRIVATE_TARGETS: ' 10.20.0.0/16, fd00:20::/48 ,192.168.1.7' }).ALLOW_PRIVATE_TARGETS).toEqual(['10.20.0.0/16', 'fd00:20::/48', '192.168.1.7']);
    expect(() => outbound({ ALLOW_PRIVATE_TARGETS: '10.0.0.0/8,yes,10.0.0.0/40' })).toThrow('ALLOW_PRIVATE_TARGETS: not a CIDR range: yes, 10.0.0.0/40');
  });

  it('reads PLATFORM_ENDPOINTS as host:port entries', () => {
    expect(outbound({ PLATFORM_ENDPOINTS: 'redis:6379, [::1]:8092,10.0.0.5:9092' }).PLATFORM_ENDPOINTS).toEqual([
      { host: 'redis', port: 6379 },
      { host: '::1', port: 8092 },
      { host: '10.0.0.5', port: 9092 },
    ]);
    expect(() => outbound({ PLATFORM_ENDPOINTS: 'redis,gateway:0,ok:1' })).toThrow('PLATFORM_ENDPOINTS: not host:port: redis, gateway:0');
  });

  it("lists a process's own address, MongoDB's hosts, the brokers, Redis and PLATFORM_ENDPOINTS as the platform's endpoints", () => {
    expect(
      platformEndpointsOf({
        HOST: '0.0.0.0',
        PORT: 8092,
        MONGO_URL: 'mongodb://user:p%40ss@db1:27018,db2,[fd00::7]:27019/app?replicaSet=rs0',
        KAFKA_BROKERS: ['k1:9092', 'k2:9093'],
        REDIS_URL: 'rediss://:secret@cache.internal',
        PLATFORM_ENDPOINTS: [{ host: 'gateway', port: 8080 }],
      }),
    ).toEqual([
      { host: '0.0.0.0', port: 8092 },
      { host: 'db1', port: 27018 },
      { host: 'db2', port: 27017 },
      { host: 'fd00::7', port: 27019 },
      { host: 'k1', port: 9092 },
      { host: 'k2', port: 9093 },
      { host: 'cache.internal', port: 6379 },
      { host: 'gateway', port: 8080 },
    ]);
    expect(platformEndpointsOf({ MONGO_URL: 'mongodb+srv://u:p@cluster0.example.net/app' })).toEqual([{ host: 'cluster0.example.net', port: 27017 }]);
    // Redis behind Sentinel: a URL with several hosts (which new URL() refuses), or Sentinels named apart.
    expect(platformEndpointsOf({ REDIS_URL: 'redis+sentinel://:pw@s1:26380,s2,[fd00::9]:26381/dap/2' })).toEqual([
      { host: 's1', port: 26380 },
      { host: 's2', port: 26379 },
      { host: 'fd00::9', port: 26381 },
    ]);
    expect(platformEndpointsOf({ REDIS_URL: 'redis://:pw@unused/0', REDIS_SENTINELS: ['s1:26379', 's2'] })).toEqual([
      { host: 'unused', port: 6379 },
      { host: 's1', port: 26379 },
      { host: 's2', port: 26379 },
    ]);
  });
});

describe('Kafka topic layout per family', () => {
  it('defaults to 12 partitions for events and 3 for dead letters, replication left to fit the cluster', () => {
    const s = kafkaSettingsOf(loadConfig(serviceConfigShape('models'), service));
    expect(s.topics).toEqual({ events: { partitions: 12 }, deadLetters: { partitions: 3 } });
  });

  it('takes partitions, replication factor and min.insync.replicas per family from the environment', () => {
    const env = {
      ...base,
      KAFKA_EVENTS_PARTITIONS: '24',
      KAFKA_EVENTS_REPLICATION_FACTOR: '3',
      KAFKA_EVENTS_MIN_INSYNC_REPLICAS: '2',
      KAFKA_DLQ_PARTITIONS: '1',
      KAFKA_DLQ_REPLICATION_FACTOR: '1',
      KAFKA_DLQ_MIN_INSYNC_REPLICAS: '',
    };
    expect(kafkaSettingsOf(loadConfig(kafkaConfig, env)).topics).toEqual({
      events: { partitions: 24, replicationFactor: 3, minInsyncReplicas: 2 },
      deadLetters: { partitions: 1, replicationFactor: 1 },
    });
  });

  it('refuses zero or fractional counts, and more in-sync replicas than copies, naming the variable', () => {
    const fail = (extra: Record<string, string>) => {
      try {
        loadConfig(kafkaConfig, { ...base, ...extra });
        return 'accepted';
      } catch (e) {
        return (e as Error).message;
      }
    };
    expect(fail({ KAFKA_EVENTS_PARTITIONS: '0' })).toMatch(/KAFKA_EVENTS_PARTITIONS/);
    expect(fail({ KAFKA_DLQ_REPLICATION_FACTOR: '1.5' })).toMatch(/KAFKA_DLQ_REPLICATION_FACTOR/);
    expect(fail({ KAFKA_EVENTS_REPLICATION_FACTOR: '2', KAFKA_EVENTS_MIN_INSYNC_REPLICAS: '3' })).toBe(
      'invalid configuration:\n  KAFKA_EVENTS_MIN_INSYNC_REPLICAS: at most KAFKA_EVENTS_REPLICATION_FACTOR (2): no write could ever be acknowledged',
    );
    expect(fail({ KAFKA_EVENTS_REPLICATION_FACTOR: '3', KAFKA_EVENTS_MIN_INSYNC_REPLICAS: '3' })).toBe('accepted');
  });
});

describe('Redis behind Sentinel or TLS', () => {
  const fail = (env: Record<string, string>) => {
    try {
      loadConfig(redisConfig, env);
      return 'accepted';
    } catch (e) {
      return (e as Error).message;
    }
  };

  it('accepts redis://, rediss:// and Sentinel URLs, and Sentinels named apart from the URL', () => {
    for (const url of ['redis://cache:6379', 'rediss://:pw@cache:6380/1', 'redis+sentinel://s1:26379,s2:26379/mymaster', 'rediss+sentinel://s1/m/2']) {
      expect(fail({ REDIS_URL: url })).toBe('accepted');
    }
    const c = loadConfig(redisConfig, { REDIS_URL: 'redis://:pw@unused/0', REDIS_SENTINELS: 's1:26379, s2:26379', REDIS_SENTINEL_NAME: 'mymaster', REDIS_SENTINEL_PASSWORD: '' });
    expect(redisTargetOf(c)).toEqual({ url: 'redis://:pw@unused/0', sentinels: ['s1:26379', 's2:26379'], sentinelName: 'mymaster', sentinelPassword: undefined });
  });

  it('refuses another scheme, half a Sentinel setting, or Sentinels named twice', () => {
    expect(fail({ REDIS_URL: 'http://cache:6379' })).toMatch(/REDIS_URL: a redis:\/\/, rediss:\/\//);
    expect(fail({ REDIS_URL: 'redis://x', REDIS_SENTINELS: 's1:26379' })).toBe(
      'invalid configuration:\n  REDIS_SENTINEL_NAME: REDIS_SENTINELS and REDIS_SENTINEL_NAME go together',
    );
    expect(fail({ REDIS_URL: 'redis+sentinel://s1/m', REDIS_SENTINELS: 's1:26379', REDIS_SENTINEL_NAME: 'm' })).toMatch(/not both/);
  });
});
