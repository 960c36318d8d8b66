import type { Consumer } from 'kafkajs';
import { domainEventSchema, newId, TOPICS } from '@dap/contracts';
import { createKafka, topicName } from '@dap/kafka';
import { createLogger } from '@dap/logger';
import { connectMongo } from '@dap/mongo';
import { serviceClient, serviceTestEnv, uniqueSuffix, waitFor } from '@dap/testing';
import { FORECAST_MODEL_ID, loadModelsConfig, startModels } from '../src/index.ts';

/**
 * A graceful stop loses no answered prediction: with its log written after the answer (`after_answer`) and its
 * events held by the relay, the stop writes out the queued entries and then publishes every held event.
 */
const suffix = uniqueSuffix();
// The linger outlasts the test: only the shutdown can publish the predictions' events.
const config = loadModelsConfig(
  serviceTestEnv(`models_stop_${suffix}`, `s${suffix}.`, { PREDICTION_LOG_WRITE: 'after_answer', OUTBOX_LINGER_MS: '5000', OUTBOX_INTERVAL_MS: '60000' }),
);
const logger = createLogger({ name: 'models-stop-test', level: 'silent' });
let consumer: Consumer | null = null;

afterAll(async () => {
  await consumer?.disconnect();
});

it('stores every answered prediction’s log entry and publishes its prediction.completed when stopped', async () => {
  const svc = await startModels(config);
  const db = svc.mongo.db;
  const kafka = createKafka(svc.eventing.settings, logger);
  consumer = kafka.consumer({ groupId: `s${suffix}.stop-test`, maxWaitTimeInMs: 50 });
  await consumer.connect();
  await consumer.subscribe({ topic: topicName(svc.eventing.settings, TOPICS.models), fromBeginning: true });
  const published = new Set<string>();
  await consumer.run({
    eachMessage: async ({ message }) => {
      const event = domainEventSchema.parse(JSON.parse(message.value!.toString('utf8')));
      if (event.type === 'prediction.completed') published.add(event.data.id);
    },
  });
  const client = serviceClient(() => svc.url, newId('acct'));
  const input = { inputs: [{ series: [3, 5, 4, 6, 5, 7, 6, 8, 7, 9], horizon: 2 }] };
  const answers = await Promise.all(Array.from({ length: 60 }, () => client.post(`/models/${FORECAST_MODEL_ID}/predict`, input)));
  expect(answers.map((a) => a.status)).toEqual(answers.map(() => 200));
  const ids = answers.map((a) => a.body.id as string);
  // Answered, and their events still held: the linger has not passed (positive control for the stop below).
  expect(published.size).toBe(0);

  await svc.stop();
  const mongo = await connectMongo(config.MONGO_URL, db.databaseName);
  try {
    const stored = await mongo.db
      .collection('prediction_log')
      .find({ _id: { $in: ids as never[] } }, { projection: { _outboxPending: 1 } })
      .toArray();
    expect(stored).toHaveLength(ids.length);
    expect(stored.filter((d) => d._outboxPending !== false)).toEqual([]); // every event published, then cleared
    await waitFor(() => ids.every((id) => published.has(id)), { what: 'every prediction.completed on Kafka' });
  } finally {
    await mongo.db.dropDatabase().catch(() => {});
    await mongo.close();
  }
});
