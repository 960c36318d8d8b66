import { makeEvent, newId, type DomainEvent } from '@dap/contracts';
import { connectMongo, TenantCollection, type MongoHandle, type WrittenEvents } from '@dap/mongo';
import { stackEnv, uniqueSuffix } from '@dap/testing';
import type { Logger } from '@dap/logger';
import { PredictionLogRepository, type LogBatching, type PredictionLogDoc } from '../src/persistence/prediction-log.repository.ts';

/** The prediction log's grouped inserts, on the test stack's MongoDB. */
let mongo: MongoHandle;

beforeAll(async () => {
  mongo = await connectMongo(stackEnv().MONGO_URL, `models_log_${uniqueSuffix()}`);
});
afterAll(async () => {
  await mongo.db.dropDatabase().catch(() => {});
  await mongo.close();
});

function setup(name: string, batching?: Partial<LogBatching>, logger: Logger | null = null) {
  const handed: WrittenEvents[] = [];
  const coll = new TenantCollection<PredictionLogDoc>(mongo.db, name, (w) => handed.push(w));
  const calls = { insertMany: 0, insertOne: 0 };
  const raw = coll.raw;
  const insertMany = raw.insertMany.bind(raw);
  const insertOne = raw.insertOne.bind(raw);
  raw.insertMany = ((...args: Parameters<typeof insertMany>) => (calls.insertMany++, insertMany(...args))) as typeof raw.insertMany;
  raw.insertOne = ((...args: Parameters<typeof insertOne>) => (calls.insertOne++, insertOne(...args))) as typeof raw.insertOne;
  const settings: LogBatching = { write: 'before_answer', maxBatch: 500, maxQueued: 10_000, retryMs: 10, ...batching };
  return { repo: new PredictionLogRepository(coll, settings, logger), coll, handed, calls, insertMany };
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

describe('PredictionLogRepository.record, answering once the entry is stored (before_answer)', () => {
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
    const { repo } = setup('bounded', { maxQueued: 3 });
    const acct = newId('acct');
    const first = repo.record(acct, entry()); // in flight
    const waiting = [repo.record(acct, entry()), repo.record(acct, entry()), repo.record(acct, entry())];
    await expect(repo.record(acct, entry())).rejects.toMatchObject({ code: 'service_busy', retryAfterSeconds: 1 });
    await first;
    await Promise.all(waiting); // positive control: the three queued ones are stored
    await expect(repo.record(acct, entry())).resolves.toBeUndefined();
  });
});

describe('PredictionLogRepository.record, answering first (after_answer)', () => {
  it('answers before the insert, retries a failed insert until the entries are stored (a duplicate then meaning stored), and flush waits for it', async () => {
    const { repo, coll, handed, insertMany } = setup('after', { write: 'after_answer' });
    const acct = newId('acct');
    let attempts = 0;
    coll.raw.insertMany = (async (...args: Parameters<typeof insertMany>) => {
      attempts++;
      if (attempts === 1) throw new Error('the server went away'); // nothing stored
      if (attempts === 2) {
        await insertMany(...args); // stored, but the answer is lost
        throw new Error('the connection dropped');
      }
      return insertMany(...args);
    }) as typeof coll.raw.insertMany;
    const docs = [entry(), entry(), entry()];
    // Every record resolves although the first insert fails: the request does not wait for it.
    await Promise.all(docs.map((d) => repo.record(acct, d, [completed(acct, d._id)])));
    expect(attempts).toBe(1);
    expect(await repo.flush()).toBe(true);
    expect(attempts).toBe(3);
    expect(await coll.raw.countDocuments({ accountId: acct })).toBe(3);
    // Stored by the second attempt, answered by the third as duplicates: the relay's sweep publishes their events.
    expect(handed).toEqual([]);
    expect(await coll.raw.countDocuments({ accountId: acct, _outboxPending: true })).toBe(3);
  });

  it('writes out what is queued at shutdown, and logs what it could not store in time', async () => {
    const errors: unknown[] = [];
    const logger = { warn: () => {}, error: (o: unknown) => void errors.push(o) } as unknown as Logger;
    const { repo, coll, insertMany } = setup('closing', { write: 'after_answer' }, logger);
    const acct = newId('acct');
    let down = true;
    coll.raw.insertMany = (async (...args: Parameters<typeof insertMany>) => {
      if (down) throw new Error('the server went away');
      return insertMany(...args);
    }) as typeof coll.raw.insertMany;
    for (let i = 0; i < 5; i++) await repo.record(acct, entry());
    setTimeout(() => (down = false), 50); // back during the shutdown's grace time
    await repo.close(5_000);
    expect(await coll.raw.countDocuments({ accountId: acct })).toBe(5);
    expect(errors).toEqual([]);

    const stuck = setup('stuck', { write: 'after_answer' }, logger);
    stuck.coll.raw.insertMany = (async () => {
      throw new Error('the server went away');
    }) as never;
    for (let i = 0; i < 2; i++) await stuck.repo.record(acct, entry());
    await stuck.repo.close(100);
    expect(errors).toEqual([{ lost: 2 }]);
  });
});
