import { logLevel } from 'kafkajs';
import { kafkaSettingsOf, loadConfig, kafkaConfig } from '@dap/config';
import { isRetriableAtStartup, kafkaClientConfig } from './index.ts';

describe('kafkaClientConfig', () => {
  const plain = { brokers: ['k1:9092'], clientId: 'svc', topicPrefix: 't.' };

  it('keeps the timeouts and retries, and adds neither TLS nor SASL by default', () => {
    expect(kafkaClientConfig(plain)).toEqual({
      clientId: 'svc',
      brokers: ['k1:9092'],
      connectionTimeout: 3_000,
      requestTimeout: 10_000,
      retry: { initialRetryTime: 200, retries: 8 },
      logLevel: logLevel.WARN,
    });
    expect(kafkaClientConfig({ ...plain, ssl: false })).not.toHaveProperty('ssl');
  });

  it('passes TLS and SASL to kafkajs from the environment', () => {
    const settings = kafkaSettingsOf(
      loadConfig(kafkaConfig, {
        KAFKA_BROKERS: 'b-1.kafka.example:9096,b-2.kafka.example:9096',
        KAFKA_CLIENT_ID: 'models',
        KAFKA_SSL: 'true',
        KAFKA_SASL_MECHANISM: 'scram-sha-512',
        KAFKA_SASL_USERNAME: 'models',
        KAFKA_SASL_PASSWORD: 's3cret',
      }),
    );
    const c = kafkaClientConfig(settings);
    expect(c.brokers).toEqual(['b-1.kafka.example:9096', 'b-2.kafka.example:9096']);
    expect(c.ssl).toBe(true);
    expect(c.sasl).toEqual({ mechanism: 'scram-sha-512', username: 'models', password: 's3cret' });
  });

  it.each(['plain', 'scram-sha-256', 'scram-sha-512'] as const)('SASL %s without TLS (SASL_PLAINTEXT)', (mechanism) => {
    const c = kafkaClientConfig({ ...plain, sasl: { mechanism, username: 'u', password: 'p' } });
    expect(c.sasl).toEqual({ mechanism, username: 'u', password: 'p' });
    expect(c).not.toHaveProperty('ssl');
  });
});

describe('isRetriableAtStartup', () => {
  const err = (name: string, extra: object = {}) => Object.assign(new Error(name), { name, ...extra });

  it('retries a broker that is down, closing or slow, also when kafkajs wrapped the error', () => {
    expect(isRetriableAtStartup(err('KafkaJSNumberOfRetriesExceeded', { retriable: false, cause: err('KafkaJSConnectionError', { retriable: true }) }))).toBe(true);
    expect(isRetriableAtStartup(err('KafkaJSConnectionError'))).toBe(true);
    expect(isRetriableAtStartup(err('KafkaJSRequestTimeoutError'))).toBe(true);
    expect(isRetriableAtStartup(err('KafkaJSProtocolError', { retriable: true, type: 'LEADER_NOT_AVAILABLE' }))).toBe(true);
  });

  it('does not retry refused credentials or a refused authorisation', () => {
    expect(isRetriableAtStartup(err('KafkaJSSASLAuthenticationError', { retriable: false }))).toBe(false);
    expect(isRetriableAtStartup(err('KafkaJSNumberOfRetriesExceeded', { cause: err('KafkaJSSASLAuthenticationError') }))).toBe(false);
    expect(isRetriableAtStartup(err('KafkaJSProtocolError', { retriable: false, type: 'CLUSTER_AUTHORIZATION_FAILED' }))).toBe(false);
    expect(isRetriableAtStartup(err('TypeError'))).toBe(false);
    expect(isRetriableAtStartup(undefined)).toBe(false);
  });
});
