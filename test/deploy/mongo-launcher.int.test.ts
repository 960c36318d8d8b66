import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { Binary, Decimal128, MongoClient, MongoServerError, ObjectId, type Collection } from 'mongodb';
import { repoRoot } from '@dap/testing';
import { freePort } from '../../deploy/local/supervisor.ts';

/**
 * The local MongoDB-wire server (deploy/local/jvm/mongo/MongoLauncher.java, built by the test stack's
 * install step) orders index keys by value instead of by their Java serialisation, and stores documents as
 * BSON. A store written the old way (H2's defaults, still available behind a system property) is re-sorted
 * once on the next start and its documents read as they were; every document stays findable by id, equal
 * to what was written, with uniqueness intact, across restarts.
 */
const jars = join(repoRoot(), '.cache', 'jars');
const usesRealMongod = spawnSync('sh', ['-c', 'command -v mongod']).status === 0;
const maybe = usesRealMongod ? describe.skip : describe;

interface Launched {
  url: string;
  lines: string[];
  stop(): Promise<void>;
}

async function launch(file: string, props: string[] = []): Promise<Launched> {
  const port = await freePort();
  const child: ChildProcess = spawn(
    'java',
    ['-Xmx256m', ...props, '-cp', `${join(jars, 'mongo')}/*:${join(jars, 'mongo-launcher')}`, 'MongoLauncher', '127.0.0.1', String(port), file],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const lines: string[] = [];
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`MongoLauncher did not start:\n${lines.join('\n')}`)), 30_000);
    child.once('exit', (code) => reject(new Error(`MongoLauncher exited with ${code}:\n${lines.join('\n')}`)));
    createInterface({ input: child.stdout! }).on('line', (line) => {
      lines.push(line);
      if (line.startsWith('MongoLauncher: listening on')) {
        clearTimeout(timer);
        resolve();
      }
    });
  });
  return {
    url: `mongodb://127.0.0.1:${port}/?directConnection=true`,
    lines,
    stop: async () => {
      child.kill('SIGTERM');
      await exited;
    },
  };
}

const N = 1_500;
/** Ids of every kind the order treats differently: strings, integers, ObjectIds, and embedded documents. */
type Id = string | number | ObjectId | { shard: number; n: number };
function idOf(i: number): Id {
  switch (i % 4) {
    case 0:
      return `evt_${i}:whe_${i % 7}`;
    case 1:
      return i;
    case 2:
      return new ObjectId(i.toString(16).padStart(24, '0'));
    default:
      return { shard: i % 5, n: i };
  }
}

/** A document with every kind of value the store writes (binary ones keep the old format). */
function docOf(i: number): Doc {
  return {
    _id: idOf(i),
    a: `k${i % 50}`,
    b: i,
    nested: { s: `x${i}`, list: [i, 'two', { three: 3 }], empty: {} },
    at: new Date(1_700_000_000_000 + i),
    big: 9_007_199_254_740_993n + BigInt(i),
    d: 0.1 + i,
    t: i % 2 === 0,
    nil: null,
    oid: new ObjectId((i + 7).toString(16).padStart(24, '0')),
    dec: Decimal128.fromString(`${i}.10`),
    ...(i % 10 === 0 ? { bin: new Binary(Buffer.from([1, 2, i % 256])) } : {}),
  };
}

/** Documents with ids of any type (the driver would otherwise want ObjectIds). */
type Doc = { _id: Id } & Record<string, unknown>;

async function withCollection<T>(url: string, fn: (c: Collection<Doc>) => Promise<T>): Promise<T> {
  const client = await MongoClient.connect(url, { serverSelectionTimeoutMS: 10_000, useBigInt64: true });
  try {
    return await fn(client.db('launcher').collection<Doc>('docs'));
  } finally {
    await client.close();
  }
}

async function expectDuplicate(p: Promise<unknown>): Promise<void> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(MongoServerError);
  expect((err as MongoServerError).code).toBe(11000);
}

/** Every document by id and as written, both unique indexes enforced, and a new document accepted. */
async function checkStore(url: string, extra: number, touched = false): Promise<void> {
  await withCollection(url, async (c) => {
    const differing: number[] = [];
    for (let i = 0; i < N; i++) {
      const doc = await c.findOne({ _id: idOf(i) });
      try {
        expect(doc).toEqual(touched ? { ...docOf(i), touched: true } : docOf(i));
      } catch {
        differing.push(i);
      }
    }
    expect(differing).toEqual([]);
    await expectDuplicate(c.insertOne({ _id: idOf(8), a: 'other', b: -1 }));
    await expectDuplicate(c.insertOne({ _id: idOf(9), a: 'other', b: -1 }));
    await expectDuplicate(c.insertOne({ _id: idOf(10), a: 'other', b: -1 }));
    await expectDuplicate(c.insertOne({ _id: idOf(11), a: 'other', b: -1 }));
    await expectDuplicate(c.insertOne({ _id: 'fresh-dup', a: 'k3', b: 3 }));
    await c.insertOne({ _id: `fresh-${extra}`, a: 'k3', b: 1_000_000 + extra });
    expect(await c.countDocuments()).toBe(N + extra);
    expect((await c.findOne({ _id: `fresh-${extra}` }))?.b).toBe(1_000_000 + extra);
  });
}

maybe('MongoLauncher storage', () => {
  let dir: string;
  beforeAll(() => {
    if (!existsSync(join(jars, 'mongo-launcher', 'MongoLauncher.class'))) {
      throw new Error(`the MongoDB-wire server is not built in ${jars}: start the test stack first (bash deploy/local/stack.sh up test)`);
    }
    dir = mkdtempSync(join(tmpdir(), 'dap-mongo-launcher-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  test('a store written the old way is re-sorted once and read as written; documents, keys and uniqueness survive restarts', async () => {
    const file = join(dir, 'store.h2');
    // H2's defaults race with their own background commit (see MongoLauncher.openStore): written on close only.
    const old = await launch(file, ['-Ddap.mongo.h2Defaults=true', '-Ddap.mvstore.commitOnCloseOnly=true']);
    try {
      await withCollection(old.url, async (c) => {
        await c.createIndex({ a: 1, b: 1 }, { unique: true });
        await c.insertMany(Array.from({ length: N }, (_, i) => docOf(i)));
      });
    } finally {
      await old.stop();
    }

    const first = await launch(file);
    try {
      const resorted = first.lines.filter((l) => l.includes('re-sorted'));
      expect(resorted).toEqual(
        expect.arrayContaining([`MongoLauncher: index launcher.docs._index__id_ re-sorted (${N} keys)`, `MongoLauncher: index launcher.docs._index_a_1_b_1 re-sorted (${N} keys)`]),
      );
      await checkStore(first.url, 1);
      // Every page written again, in the new format this time.
      await withCollection(first.url, (c) => c.updateMany({ b: { $lt: N } }, { $set: { touched: true } }));
    } finally {
      await first.stop();
    }

    const second = await launch(file);
    try {
      expect(second.lines.filter((l) => l.includes('re-sorted'))).toEqual([]);
      await checkStore(second.url, 2, true);
      // An update moves its keys: the old pair is free again, the new one taken.
      await withCollection(second.url, async (c) => {
        await c.updateOne({ _id: idOf(5) }, { $set: { b: 5_000_005 } });
        await c.insertOne({ _id: 'took-old-pair', a: 'k5', b: 5 });
        await expectDuplicate(c.insertOne({ _id: 'dup-new-pair', a: 'k5', b: 5_000_005 }));
      });
      // A collection created in the new order, dropped and created again, starts empty and unique.
      await withCollection(second.url, async (c) => {
        const fresh = c.db.collection<Doc>('fresh');
        await fresh.insertMany(Array.from({ length: 200 }, (_, i) => ({ _id: idOf(i) })));
        await fresh.drop();
        await fresh.insertOne({ _id: idOf(4) });
        expect(await fresh.countDocuments()).toBe(1);
        await expectDuplicate(fresh.insertOne({ _id: idOf(4) }));
      });
    } finally {
      await second.stop();
    }
  }, 120_000);

  test('non-unique indexes answer equality queries, and a query that pins an index by equality reads through it; both survive writes and restarts', async () => {
    const file = join(dir, 'secondary.h2');
    const n = 2_000;
    const docs = Array.from({ length: n }, (_, i) => ({
      _id: `d${i}`,
      accountId: `a${i % 10}`,
      status: i % 3 === 0 ? 'bad' : 'ok',
      flag: i % 100 === 0,
      meta: { kind: `k${i % 5}` },
      // Some with none: such a document has no key in an index on tags, yet matches a query on the fields before it.
      tags: i % 13 === 0 ? [] : [`t${i % 7}`, `u${i % 11}`],
      n: i % 4,
    }));
    const ids = (pred: (d: (typeof docs)[number]) => boolean) =>
      docs
        .filter(pred)
        .map((d) => d._id)
        .sort();
    const found = async (c: Collection<Doc>, q: object) => (await c.find(q).toArray()).map((d) => d._id as string).sort();
    // The test collection's (createIndex reads the database's index list with a scan of its own).
    const scans = (l: Launched) => l.lines.filter((line) => line.startsWith('MongoLauncher: scan launcher.docs '));
    // Every query the indexes should answer, with what it must find.
    const check = async (c: Collection<Doc>) => {
      expect(await found(c, { flag: true })).toEqual(ids((d) => d.flag));
      expect(await found(c, { accountId: 'a3', status: 'bad' })).toEqual(ids((d) => d.accountId === 'a3' && d.status === 'bad'));
      expect(await found(c, { 'meta.kind': 'k1', flag: true })).toEqual(ids((d) => d.meta.kind === 'k1' && d.flag));
      expect(await found(c, { tags: 'u3' })).toEqual(ids((d) => d.tags.includes('u3')));
      expect(await found(c, { n: 2.0 })).toEqual(ids((d) => d.n === 2)); // a double finds the integers stored
      expect(await found(c, { _id: 'd42', accountId: 'a2' })).toEqual(['d42']);
      expect(await found(c, { _id: 'd42', accountId: 'a3' })).toEqual([]);
      expect(await found(c, { _id: 'd43', status: 'ok', flag: false })).toEqual(['d43']);
      // Leading fields of a compound index: the first alone, and the first two of three.
      expect(await found(c, { accountId: 'a4', flag: false })).toEqual(ids((d) => d.accountId === 'a4' && !d.flag));
      expect(await found(c, { accountId: 'a5', n: 1, status: { $in: ['ok', 'bad'] } })).toEqual(ids((d) => d.accountId === 'a5' && d.n === 1));
      expect(await c.find({ accountId: 'a6', _id: { $lt: 'd3' } }, { sort: { _id: -1 }, limit: 3 }).toArray()).toEqual(
        docs
          .filter((d) => d.accountId === 'a6' && d._id < 'd3')
          .sort((x, y) => (x._id < y._id ? 1 : -1))
          .slice(0, 3),
      );
    };

    const first = await launch(file, ['-Ddap.mongo.logScans=true']);
    try {
      await withCollection(first.url, async (c) => {
        await c.insertMany(docs.slice(0, n / 2));
        // Indexes made on a collection that has documents, then documents added after.
        const indexes: Record<string, 1 | -1>[] = [
          { flag: 1 },
          { accountId: 1, status: 1 },
          { 'meta.kind': 1 },
          { tags: 1 },
          { n: 1 },
          { accountId: 1, n: 1, status: 1 },
          { accountId: 1, _id: -1 },
          { accountId: 1, tags: 1 },
        ];
        for (const keys of indexes) await c.createIndex(keys);
        await c.insertMany(docs.slice(n / 2));
        await check(c);
        // Writes move documents between keys: pinned by _id (and another field), by an index, and deleted.
        const d7 = docs[7]!;
        await c.updateOne({ _id: 'd7', accountId: 'a7' }, { $set: { flag: true } });
        d7.flag = true;
        await c.updateMany({ flag: true, accountId: 'a0' }, { $set: { flag: false } });
        for (const d of docs) if (d.flag && d.accountId === 'a0') d.flag = false;
        await c.deleteOne({ _id: 'd101', accountId: 'a1' });
        docs.splice(101, 1);
        await c.updateOne({ _id: 'd5' }, { $set: { tags: ['u3'] } });
        docs[5]!.tags = ['u3'];
        await check(c);
        expect(await found(c, { flag: true })).toContain('d7');
        expect(scans(first)).toEqual([]);
        // The positive control: no index covers status alone (the compound one needs accountId too).
        expect(await found(c, { status: 'bad' })).toEqual(ids((d) => d.status === 'bad'));
        expect(scans(first)).toEqual(['MongoLauncher: scan launcher.docs [status]']);
      });
    } finally {
      await first.stop();
    }

    // Kept in memory: rebuilt from the documents when the server opens the collection again.
    const second = await launch(file, ['-Ddap.mongo.logScans=true']);
    try {
      await withCollection(second.url, check);
      expect(scans(second)).toEqual([]);
    } finally {
      await second.stop();
    }
  }, 120_000);
});
