import { isRetriableTopicSetup } from './index.ts';

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
