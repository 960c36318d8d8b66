import { isRetriableTopicSetup, resolveTopicLayout } from './index.ts';

/** Shapes kafkajs gives when creating topics on a busy or a misconfigured cluster. */
const protocol = (type: string, retriable: boolean) => Object.assign(new Error(type), { name: 'KafkaJSProtocolError', type, retriable });

describe('isRetriableTopicSetup', () => {
  it.each([
    [
      'a timeout waiting for leaders (kafkajs marks it non-retriable)',
      Object.assign(new Error('Timed out while waiting for topic leaders'), { name: 'KafkaJSTimeout', retriable: false }),
    ],
    [
      'an aggregate of per-topic errors (no retriable flag)',
      Object.assign(new Error('Topic creation errors'), { name: 'KafkaJSAggregateError', errors: [protocol('TOPIC_ALREADY_EXISTS', false), protocol('REQUEST_TIMED_OUT', true)] }),
    ],
    ['a leader election', protocol('LEADER_NOT_AVAILABLE', true)],
    ['our own not-ready check', Object.assign(new Error('not ready yet: t.sources'), { name: 'TopicsNotReady' })],
    ['kafkajs failing on an empty metadata answer', new TypeError("Cannot read properties of undefined (reading 'map')")],
  ])('retries %s', (_what, err) => expect(isRetriableTopicSetup(err)).toBe(true));

  it.each([
    ['a topic authorisation refusal', protocol('TOPIC_AUTHORIZATION_FAILED', false)],
    [
      'a cluster authorisation refusal inside an aggregate',
      Object.assign(new Error('Topic creation errors'), { name: 'KafkaJSAggregateError', errors: [protocol('CLUSTER_AUTHORIZATION_FAILED', false)] }),
    ],
    [
      'a replication factor the cluster cannot have',
      Object.assign(new Error('Topic creation errors'), {
        name: 'KafkaJSAggregateError',
        errors: [protocol('TOPIC_ALREADY_EXISTS', false), protocol('INVALID_REPLICATION_FACTOR', false)],
      }),
    ],
    ['a policy violation behind a wrapper', Object.assign(new Error('wrapped'), { cause: protocol('POLICY_VIOLATION', false) })],
    ['SASL failure', Object.assign(new Error('SASL SCRAM SHA256 authentication failed'), { name: 'KafkaJSSASLAuthenticationError' })],
  ])('does not retry %s', (_what, err) => expect(isRetriableTopicSetup(err)).toBe(false));
});

describe('resolveTopicLayout', () => {
  it('gives 3 replicas with 2 in sync on a cluster of 3 or more brokers when replication is left unset', () => {
    expect(resolveTopicLayout({ partitions: 12 }, 3)).toEqual({ partitions: 12, replicationFactor: 3, minInsyncReplicas: 2 });
    expect(resolveTopicLayout({ partitions: 12 }, 6)).toEqual({ partitions: 12, replicationFactor: 3, minInsyncReplicas: 2 });
  });

  it('fits a smaller cluster when left unset: one broker gets 1 and 1, two get 2 and 1', () => {
    expect(resolveTopicLayout({ partitions: 3 }, 1)).toEqual({ partitions: 3, replicationFactor: 1, minInsyncReplicas: 1 });
    expect(resolveTopicLayout({ partitions: 3 }, 2)).toEqual({ partitions: 3, replicationFactor: 2, minInsyncReplicas: 1 });
  });

  it('keeps explicit values whatever the cluster, so a short cluster refuses them instead of getting fewer copies', () => {
    expect(resolveTopicLayout({ partitions: 12, replicationFactor: 3, minInsyncReplicas: 2 }, 1)).toEqual({ partitions: 12, replicationFactor: 3, minInsyncReplicas: 2 });
    expect(resolveTopicLayout({ partitions: 4, replicationFactor: 5 }, 3)).toEqual({ partitions: 4, replicationFactor: 5, minInsyncReplicas: 2 });
  });

  it('refuses more in-sync replicas than copies, and the refusal is not retried', () => {
    let err: unknown;
    try {
      resolveTopicLayout({ partitions: 1, replicationFactor: 1, minInsyncReplicas: 2 }, 3);
    } catch (e) {
      err = e;
    }
    expect((err as Error).message).toMatch(/min.insync.replicas 2 exceeds the replication factor 1/);
    expect(isRetriableTopicSetup(err)).toBe(false);
  });
});
