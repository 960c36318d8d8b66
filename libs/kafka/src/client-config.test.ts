import { logLevel } from 'kafkajs';
import { kafkaSettingsOf, loadConfig, kafkaConfig } from '@dap/config';
import createRetry from 'kafkajs/src/retry/index.js';
import { CLIENT_RETRY, isRetriableAtStartup, kafkaClientConfig } from './index.ts';

describe('kafkaClientConfig', () => {
  const plain = { brokers: ['k1:9092'], clientId: 'svc', topicPrefix: 't.' };

  it('keeps the timeouts and retries, and adds neither TLS nor SASL by default', () => {
    expect(kafkaClientConfig(plain)).toEqual({
      clientId: 'svc',
      brokers: ['k1:9092'],
      connectionTimeout: 3_000,
      requestTimeout: 10_000,
      retry: { initialRetryTime: 200, maxRetryTime: 2_000, retries: 8, factor: 0.2, multiplier: 2 },
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

describe('CLIENT_RETRY, timed with kafkajs own retrier', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  /** Attempt times (ms from the first) of an operation that always fails as a dead broker makes it fail. */
  async function attemptsAgainstDeadBroker(): Promise<{ at: number[]; error: Error }> {
    const start = Date.now();
    const at: number[] = [];
    const outcome = createRetry({ ...CLIENT_RETRY })(async () => {
      at.push(Date.now() - start);
      throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:31091'), { name: 'KafkaJSConnectionError', retriable: true });
    }).catch((err: Error) => err);
    await jest.advanceTimersByTimeAsync(120_000);
    return { at, error: (await outcome) as Error };
  }

  it.each([1, 2, 3, 4, 5])('retries at most 2 s apart, so a consumer heartbeats well within its 10-s session (run %i)', async () => {
    const { at } = await attemptsAgainstDeadBroker();
    const gaps = at.slice(1).map((t, i) => t - at[i]!);
    expect(gaps).toHaveLength(CLIENT_RETRY.retries);
    expect(Math.max(...gaps)).toBeLessThanOrEqual(2_000);
  });

  it.each([1, 2, 3, 4, 5])('gives up only after a dead broker is fenced (9 s), so a consumer restarts and finds the new coordinator (run %i)', async () => {
    const { at, error } = await attemptsAgainstDeadBroker();
    expect(error.name).toBe('KafkaJSNumberOfRetriesExceeded');
    expect(at.at(-1)).toBeGreaterThan(9_000);
    expect(at.at(-1)).toBeLessThan(15_000);
  });
});
