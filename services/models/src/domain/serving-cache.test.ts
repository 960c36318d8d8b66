import { newId } from '@dap/contracts';
import type { ModelVersionDoc } from '../persistence/model-version.repository.ts';
import type { ModelRecord } from './model.ts';
import { ServingCache, type ServingSource } from './serving-cache.ts';

const TTL = 1_000;

/** The stored models per account, as a ModelRepository answers them (another account's id is not found), counting reads. */
function store() {
  const models = new Map<string, ModelRecord>();
  const reads: string[] = [];
  let gate: Promise<void> | null = null;
  const source: ServingSource = {
    model: async (accountId, id) => {
      reads.push(`${accountId}/${id}`);
      const found = models.get(`${accountId}/${id}`);
      const copy = found ? { ...found, aliases: { ...found.aliases } } : null;
      if (gate) await gate;
      return copy;
    },
    version: async (accountId, id, version) => {
      reads.push(`${accountId}/${id}@${version}`);
      return version === 1 && models.has(`${accountId}/${id}`) ? ({ version: 1, status: 'ready' } as ModelVersionDoc) : null;
    },
  };
  return {
    source,
    reads,
    put: (accountId: string, m: ModelRecord) => models.set(`${accountId}/${m.id}`, m),
    remove: (accountId: string, id: string) => models.delete(`${accountId}/${id}`),
    /** Holds reads after they have looked (a read in flight across a change). */
    hold() {
      let open!: () => void;
      gate = new Promise((r) => (open = r));
      return () => {
        gate = null;
        open();
      };
    },
  };
}

const model = (id: string, production: number): ModelRecord => ({
  id,
  name: 'm',
  type: 'linear_regression',
  kind: 'trained',
  status: 'ready',
  version: 2,
  description: '',
  features: [],
  createdAt: new Date(0),
  aliases: { production },
});

function setup(maxEntries = 100) {
  let t = 0;
  const s = store();
  const cache = new ServingCache({ source: s.source, ttlMs: TTL, maxEntries, now: () => t });
  return { ...s, cache, advance: (ms: number) => (t += ms) };
}

describe('ServingCache', () => {
  it('serves a model from memory until its age bound, and another instance’s change after it', async () => {
    const { cache, put, reads, advance } = setup();
    const acct = newId('acct');
    const id = newId('mdl');
    put(acct, model(id, 1));
    expect((await cache.get(acct, id))?.record.aliases).toEqual({ production: 1 });
    put(acct, model(id, 2)); // moved by another instance
    advance(TTL / 2 - 1);
    expect((await cache.get(acct, id))?.record.aliases).toEqual({ production: 1 }); // cached: no read
    expect(reads).toHaveLength(1);
    advance(TTL / 2 + 1);
    const after = await cache.get(acct, id);
    expect(after).toMatchObject({ fresh: true, record: { aliases: { production: 2 } } });
    expect(reads).toHaveLength(2);
  });

  it('re-reads in the background past half the age bound, so steady traffic never waits and never sees more than the bound', async () => {
    const { cache, put, reads, advance } = setup();
    const acct = newId('acct');
    const id = newId('mdl');
    put(acct, model(id, 1));
    await cache.get(acct, id);
    put(acct, model(id, 2));
    advance(TTL * 0.6);
    const served = await cache.get(acct, id);
    expect(served).toMatchObject({ fresh: false, record: { aliases: { production: 1 } } }); // still within the bound
    expect(reads).toHaveLength(2); // and a refresh started
    await new Promise((r) => setImmediate(r));
    advance(TTL * 0.4 + 1); // past the bound of the first read, within the refresh's first half
    expect(await cache.get(acct, id)).toMatchObject({ fresh: false, record: { aliases: { production: 2 } } });
    expect(reads).toHaveLength(2);
  });

  it('drops a model changed here at once, and does not store a read that was in flight across the change', async () => {
    const { cache, put, reads, hold, advance } = setup();
    const acct = newId('acct');
    const id = newId('mdl');
    put(acct, model(id, 1));
    await cache.get(acct, id);
    advance(TTL * 0.6);
    const release = hold();
    await cache.get(acct, id); // starts a background read, which sees production → 1 and is held
    put(acct, model(id, 2));
    cache.invalidate(acct, id); // this instance moved the alias
    release();
    await new Promise((r) => setImmediate(r));
    expect(await cache.get(acct, id)).toMatchObject({ fresh: true, record: { aliases: { production: 2 } } });
    expect(reads).toHaveLength(3);
  });

  it('keys by account: another account asking for the same id reads its own (nothing), never the cached model', async () => {
    const { cache, put } = setup();
    const owner = newId('acct');
    const other = newId('acct');
    const id = newId('mdl');
    put(owner, model(id, 1));
    expect(await cache.get(owner, id)).not.toBeNull(); // positive control: cached for its owner
    expect(await cache.get(other, id)).toBeNull();
    expect((await cache.get(owner, id))?.fresh).toBe(false);
  });

  it('forgets a deleted model once its bound passes, caches no unknown model, and keeps at most maxEntries', async () => {
    const { cache, put, remove, reads, advance } = setup(2);
    const acct = newId('acct');
    const [x, y, z] = [newId('mdl'), newId('mdl'), newId('mdl')];
    for (const id of [x, y, z]) put(acct, model(id, 1));
    await cache.get(acct, x);
    remove(acct, x); // deleted by another instance
    advance(TTL);
    expect(await cache.get(acct, x)).toBeNull();
    expect(await cache.get(acct, x)).toBeNull();
    expect(reads.filter((r) => r.endsWith(x))).toHaveLength(3);
    for (const id of [x, y, z]) put(acct, model(id, 1));
    await cache.get(acct, x);
    await cache.get(acct, y);
    await cache.get(acct, z);
    expect(cache.size).toBe(2);
    expect((await cache.get(acct, x))?.fresh).toBe(true); // the least recently used went
  });

  it('keeps earlier versions with the entry, and looks up one it lacks', async () => {
    const { cache, put, reads } = setup();
    const acct = newId('acct');
    const id = newId('mdl');
    put(acct, model(id, 1));
    const served = await cache.get(acct, id);
    expect(await served!.version(1)).toMatchObject({ version: 1 });
    expect(await (await cache.get(acct, id))!.version(1)).toMatchObject({ version: 1 });
    expect(reads.filter((r) => r.endsWith('@1'))).toHaveLength(1);
    expect(await served!.version(7)).toBeNull();
    expect(await served!.version(7)).toBeNull(); // not found is not kept
    expect(reads.filter((r) => r.endsWith('@7'))).toHaveLength(2);
  });
});
