import { makeEvent, newId, type DomainEvent } from '@dap/contracts';
import { connectMongo, TenantCollection, type MongoHandle, type WrittenEvents } from '@dap/mongo';
import { stackEnv, uniqueSuffix } from '@dap/testing';
import { PredictionLogRepository, type PredictionLogDoc } from '../src/persistence/prediction-log.repository.ts';

/** The prediction log's grouped inserts, on the test stack's MongoDB. */
let mongo: MongoHandle;

beforeAll(async () => {
  mongo = await connectMongo(stackEnv().MONGO_URL, `models_log_${uniqueSuffix()}`);
});
afterAll(async () => {
  await mongo.db.dropDatabase().catch(() => {});
  await mongo.close();
});

function setup(name: string, batching?: { maxBatch: number; maxQueued: number }) {
  const handed: WrittenEvents[] = [];
  const coll = new TenantCollection<PredictionLogDoc>(mongo.db, name, (w) => handed.push(w));
  const calls = { insertMany: 0, insertOne: 0 };
  const raw = coll.raw;
  const insertMany = raw.insertMany.bind(raw);
  const insertOne = raw.insertOne.bind(raw);
  raw.insertMany = ((...args: Parameters<typeof insertMany>) => (calls.insertMany++, insertMany(...args))) as typeof raw.insertMany;
  raw.insertOne = ((...args: Parameters<typeof insertOne>) => (calls.insertOne++, insertOne(...args))) as typeof raw.insertOne;
  return { repo: new PredictionLogRepository(coll, batching), coll, handed, calls };
}

const entry = (id = newId('prd')): Omit<PredictionLogDoc, 'accountId'> => ({
  _id: id,
  modelId: newId('mdl'),
  modelVersion: 1,
  ok: true,
  count: 1,
  latencyMs: 0.1,
  errorCode: null,
  at: new Date(),
});
const completed = (accountId: string, id: string): DomainEvent =>
  makeEvent('prediction.completed', { accountId, subject: id, data: { id, modelId: newId('mdl'), count: 1, latencyMs: 0.1 } });

describe('PredictionLogRepository.record', () => {
  it('stores entries arriving together in a few inserts, and each is stored (with its event handed to the relay) when its promise resolves', async () => {
    const { repo, coll, handed, calls } = setup('grouped');
    const accounts = [newId('acct'), newId('acct')];
    const entries = Array.from({ length: 40 }, (_, i) => ({ accountId: accounts[i % 2]!, doc: entry() }));
    const storedAtResolve = await Promise.all(
      entries.map(async ({ accountId, doc }) => {
        await repo.record(accountId, doc, [completed(accountId, doc._id)]);
        return coll.raw.findOne({ _id: doc._id as never, accountId });
      }),
    );
    expect(storedAtResolve.every((d) => d !== null && d._outboxPending === true)).toBe(true);
    // The first entry goes at once; the 39 that arrive while it is in flight share the next insert.
    expect(calls).toEqual({ insertMany: 2, insertOne: 0 });
    expect(handed.map((w) => w.id).sort()).toEqual(entries.map((e) => e.doc._id).sort());
    expect(handed.every((w) => w.events.length === 1 && w.events[0]!.subject === w.id)).toBe(true);
  });

  it('fails only the entry that could not be stored, and passes a whole failed insert to every entry in it', async () => {
    const { repo, coll, handed } = setup('failing');
    const acct = newId('acct');
    const taken = entry();
    await repo.record(acct, taken);
    const [ok1, dup, ok2] = [entry(), { ...entry(), _id: taken._id }, entry()];
    const results = await Promise.allSettled([
      repo.record(acct, entry()),
      repo.record(acct, ok1, [completed(acct, ok1._id)]),
      repo.record(acct, dup, [completed(acct, dup._id)]),
      repo.record(acct, ok2),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
    expect(handed.map((w) => w.id)).toEqual([ok1._id]);
    expect(await coll.raw.countDocuments({ accountId: acct })).toBe(4);

    const down = new Error('the server went away');
    coll.raw.insertMany = (async () => {
      throw down;
    }) as never;
    const both = await Promise.allSettled([repo.record(acct, entry()), repo.record(acct, entry()), repo.record(acct, entry())]);
    expect(both.map((r) => (r.status === 'rejected' ? r.reason : null))).toEqual([down, down, down]);
  });

  it('refuses at once with 503 service_busy while too many entries wait, and takes entries again once they are stored', async () => {
    const { repo } = setup('bounded', { maxBatch: 500, maxQueued: 3 });
    const acct = newId('acct');
    const first = repo.record(acct, entry()); // in flight
    const waiting = [repo.record(acct, entry()), repo.record(acct, entry()), repo.record(acct, entry())];
    await expect(repo.record(acct, entry())).rejects.toMatchObject({ code: 'service_busy', retryAfterSeconds: 1 });
    await first;
    await Promise.all(waiting); // positive control: the three queued ones are stored
    await expect(repo.record(acct, entry())).resolves.toBeUndefined();
  });
});
