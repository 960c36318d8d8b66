import type { KafkaMessage } from 'kafkajs';
import { makeEvent, newId, type DomainEvent } from '@dap/contracts';
import { createLogger } from '@dap/logger';
import { DurableCommits, eachBatchHandler, type BatchContext, type EachBatchOptions, type PartitionOffset } from './index.ts';

const silent = createLogger({ name: 'each-batch-test', level: 'silent' });

const eventOf = (): DomainEvent =>
  makeEvent('delivery.completed', {
    accountId: newId('acct'),
    subject: newId('whk'),
    data: { endpointId: newId('whk'), eventId: newId('evt'), outcome: 'succeeded', attempts: 1 },
  });

const messageOf = (offset: number, value: string, type = 'delivery.completed'): KafkaMessage =>
  ({ key: null, value: Buffer.from(value), timestamp: '0', attributes: 0, offset: String(offset), headers: { 'event-type': type } }) as KafkaMessage;

/** A fetched batch of `events` (strings stand for raw message values) and a record of what the handler did with it. */
function batchOf(values: Array<DomainEvent | string>, opts: { running?: () => boolean } = {}) {
  const log: string[] = [];
  const beats = { count: 0 };
  const messages = values.map((v, i) => messageOf(100 + i, typeof v === 'string' ? v : JSON.stringify(v)));
  const ctx: BatchContext = {
    batch: { topic: 't', partition: 0, messages } as unknown as BatchContext['batch'],
    resolveOffset: (offset) => void log.push(`resolve ${offset}`),
    heartbeat: async () => void beats.count++,
    isRunning: opts.running ?? (() => true),
    isStale: () => false,
    commitOffsetsIfNecessary: async () => {},
  };
  return { ctx, log, messages, beats };
}

function handlerWith(overrides: Partial<EachBatchOptions> & { log: string[] }) {
  const deadLetters: Array<{ offset: string; reason: string }> = [];
  const run = eachBatchHandler({
    handleBatch: async (events) => void overrides.log.push(`apply ${events.map((e) => e.id).join(',')}`),
    toDeadLetter: async (_topic, message, reason) => void deadLetters.push({ offset: message.offset, reason }),
    logger: silent,
    maxAttempts: 3,
    chunkSize: 4,
    firstChunkSize: 2,
    ...overrides,
  });
  return { run, deadLetters };
}

afterEach(() => jest.useRealTimers());

describe('eachBatchHandler', () => {
  it('applies growing chunks in order and resolves each chunk’s last offset only after its handler returned', async () => {
    const events = Array.from({ length: 9 }, eventOf);
    const { ctx, log } = batchOf(events);
    const { run, deadLetters } = handlerWith({ log });
    await run(ctx);
    const ids = events.map((e) => e.id);
    expect(log).toEqual([
      `apply ${ids.slice(0, 2).join(',')}`,
      'resolve 101',
      `apply ${ids.slice(2, 6).join(',')}`,
      'resolve 105',
      `apply ${ids.slice(6, 9).join(',')}`,
      'resolve 108',
    ]);
    expect(deadLetters).toEqual([]);
  });

  it('dead-letters an undecodable message and applies the others of its chunk', async () => {
    const [a, b] = [eventOf(), eventOf()];
    const { ctx, log } = batchOf([a, '{"not":"an event"}', b]);
    const { run, deadLetters } = handlerWith({ log, firstChunkSize: 4 });
    await run(ctx);
    expect(log).toEqual([`apply ${a.id},${b.id}`, 'resolve 102']);
    expect(deadLetters).toEqual([{ offset: '101', reason: expect.stringMatching(/^undecodable: /) }]);
  });

  it('gives a failing chunk its events one by one, so only the poison event is dead-lettered, after maxAttempts', async () => {
    jest.useFakeTimers();
    const [a, poison, b] = [eventOf(), eventOf(), eventOf()];
    const { ctx, log } = batchOf([a, poison, b]);
    const { run, deadLetters } = handlerWith({
      log,
      firstChunkSize: 4,
      handleBatch: async (events) => {
        if (events.some((e) => e.id === poison.id)) throw new Error('cannot apply');
        log.push(`apply ${events.map((e) => e.id).join(',')}`);
      },
    });
    const done = run(ctx);
    await jest.runAllTimersAsync();
    await done;
    expect(log).toEqual([`apply ${a.id}`, `apply ${b.id}`, 'resolve 102']);
    expect(deadLetters).toEqual([{ offset: '101', reason: 'cannot apply' }]);
  });

  it('retries a chunk that fails on an outage as a whole, past maxAttempts, heartbeating between attempts, and dead-letters nothing', async () => {
    jest.useFakeTimers();
    const events = [eventOf(), eventOf()];
    const { ctx, log, beats } = batchOf(events);
    let calls = 0;
    const { run, deadLetters } = handlerWith({
      log,
      handleBatch: async (batch) => {
        if (++calls <= 5) throw Object.assign(new Error('down'), { name: 'MongoNetworkError' });
        log.push(`apply ${batch.map((e) => e.id).join(',')}`);
      },
    });
    const done = run(ctx);
    await jest.runAllTimersAsync();
    await done;
    expect(calls).toBe(6);
    // Five retries and the chunk's own heartbeat: the group keeps the member through the outage.
    expect(beats.count).toBe(6);
    expect(log).toEqual([`apply ${events.map((e) => e.id).join(',')}`, 'resolve 101']);
    expect(deadLetters).toEqual([]);
  });

  it('one event at a time (chunks of one): retried maxAttempts times, then dead-lettered', async () => {
    jest.useFakeTimers();
    const [bad, good] = [eventOf(), eventOf()];
    const { ctx, log } = batchOf([bad, good]);
    const attempts: string[] = [];
    const { run, deadLetters } = handlerWith({
      log,
      chunkSize: 1,
      firstChunkSize: 1,
      handleBatch: async ([e]) => {
        attempts.push(e!.id);
        if (e!.id === bad.id) throw new Error('bug');
      },
    });
    const done = run(ctx);
    await jest.runAllTimersAsync();
    await done;
    expect(attempts).toEqual([bad.id, bad.id, bad.id, good.id]);
    expect(log).toEqual(['resolve 100', 'resolve 101']);
    expect(deadLetters).toEqual([{ offset: '100', reason: 'bug' }]);
  });

  it('starts no chunk once the consumer stops: nothing after the last applied chunk is resolved', async () => {
    const events = Array.from({ length: 6 }, eventOf);
    let running = true;
    const { ctx, log } = batchOf(events, { running: () => running });
    const { run } = handlerWith({
      log,
      handleBatch: async (batch) => {
        log.push(`apply ${batch.length}`);
        running = false; // stopped while the first chunk was being applied
      },
    });
    await run(ctx);
    // The first chunk is finished and resolved (positive control); the rest is left for the next owner.
    expect(log).toEqual(['apply 2', 'resolve 101']);
  });

  it('passes over, undecoded, the types the handler does not accept, and still resolves past them', async () => {
    const wanted = eventOf();
    const { ctx, log, messages } = batchOf([wanted, 'not even json']);
    messages[1]!.headers = { 'event-type': 'endpoint.created' };
    const { run, deadLetters } = handlerWith({ log, accepts: (type) => type === 'delivery.completed' });
    await run(ctx);
    expect(log).toEqual([`apply ${wanted.id}`, 'resolve 101']);
    expect(deadLetters).toEqual([]);
  });
  it('with deferred commits, reads on once the handler took a chunk, and commits it only once its events are durable', async () => {
    jest.useFakeTimers();
    const events = Array.from({ length: 4 }, eventOf);
    const { ctx, log } = batchOf(events);
    const commits: PartitionOffset[][] = [];
    const tracker = new DurableCommits({ commit: async (o) => void commits.push(o), seek: () => {}, logger: silent, commitEveryMs: 1 });
    const stored: Array<() => void> = [];
    const { run } = handlerWith({
      log,
      commits: tracker,
      handleBatch: async (batch) => {
        log.push(`take ${batch.length}`);
        return { durable: new Promise<void>((r) => stored.push(r)) };
      },
    });
    await run(ctx);
    // Both chunks taken and resolved (the consumer fetches on) while nothing is durable, so nothing is committed.
    expect(log).toEqual(['take 2', 'resolve 101', 'take 2', 'resolve 103']);
    await jest.advanceTimersByTimeAsync(20);
    expect(commits).toEqual([]);
    stored[1]!(); // the later chunk first: still nothing past the earlier one
    await jest.advanceTimersByTimeAsync(20);
    expect(commits).toEqual([]);
    stored[0]!();
    await jest.advanceTimersByTimeAsync(20);
    expect(commits).toEqual([[{ topic: 't', partition: 0, offset: '104' }]]);
  });
});
