/**
 * The parts of kafkajs's internal Cluster that tail.ts uses. kafkajs (2.2.4, pinned by the lock) has no public
 * API to read partitions without a consumer group; its own consumer reads through these same calls.
 */
declare module 'kafkajs/src/cluster/index.js' {
  import type { ISocketFactory, KafkaConfig, logLevel } from 'kafkajs';

  interface KafkajsLogger {
    namespace(name: string, level?: logLevel): unknown;
  }
  export interface PartitionMetadata {
    partitionId: number;
    leader: number;
  }
  export interface FetchedMessage {
    offset: string;
    key: Buffer | null;
    value: Buffer | null;
    headers?: Record<string, Buffer | string | (Buffer | string)[] | undefined>;
    isControlRecord?: boolean;
  }
  export interface FetchResponse {
    responses: { topicName: string; partitions: { partition: number; errorCode: number; highWatermark: string; messages: FetchedMessage[] }[] }[];
  }
  export interface ClusterBroker {
    fetch(request: {
      maxWaitTime: number;
      minBytes: number;
      maxBytes: number;
      isolationLevel: number;
      topics: { topic: string; partitions: { partition: number; fetchOffset: string; maxBytes: number }[] }[];
    }): Promise<FetchResponse>;
  }
  export default class Cluster {
    constructor(
      options: Omit<KafkaConfig, 'logCreator' | 'logLevel'> & {
        logger: KafkajsLogger;
        socketFactory: ISocketFactory;
        allowAutoTopicCreation: boolean;
        isolationLevel: number;
        metadataMaxAge?: number;
      },
    );
    connect(): Promise<void>;
    disconnect(): Promise<void>;
    refreshMetadata(): Promise<void>;
    refreshMetadataIfNecessary(): Promise<void>;
    addMultipleTargetTopics(topics: string[]): Promise<void>;
    findTopicPartitionMetadata(topic: string): PartitionMetadata[];
    findBroker(node: { nodeId: number | string }): Promise<ClusterBroker>;
    fetchTopicsOffset(
      topics: { topic: string; fromBeginning: boolean; partitions: { partition: number }[] }[],
    ): Promise<{ topic: string; partitions: { partition: number; offset: string }[] }[]>;
  }
}

declare module 'kafkajs/src/network/socketFactory.js' {
  import type { ISocketFactory } from 'kafkajs';
  /** kafkajs's default: a net or tls socket per broker connection, as the public client makes. */
  export default function socketFactory(): ISocketFactory;
}

declare module 'kafkajs/src/retry/index.js' {
  import type { RetryOptions } from 'kafkajs';
  /** kafkajs's retrier, as its producers, consumers and broker pool use it (the unit tests time it). */
  export default function createRetry(options?: RetryOptions): <T>(fn: (bail: (err: Error) => void, retryCount: number, retryTime: number) => Promise<T>) => Promise<T>;
}
