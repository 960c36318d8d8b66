import { ConfigError, kafkaConfig, kafkaSettingsOf, loadConfig, mongoConfig, redisConfig, redisTargetOf, serviceConfigShape } from './index.ts';

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
