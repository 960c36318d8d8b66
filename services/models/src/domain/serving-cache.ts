import type { ModelVersionDoc } from '../persistence/model-version.repository.ts';
import type { ModelRecord } from './model.ts';

/** What predict needs of an own model: the model document's record and its earlier versions. */
export interface ServingSource {
  model(accountId: string, id: string): Promise<ModelRecord | null>;
  version(accountId: string, id: string, version: number): Promise<ModelVersionDoc | null>;
}

/** The model as predict serves it, from the cache or from a read made for this request. */
export interface ServedModel {
  record: ModelRecord;
  /** Read for this request: an error it leads to (not ready, no such alias) needs no second look. */
  fresh: boolean;
  /** An earlier version's snapshot; snapshots never change, so they are kept with the entry. */
  version(n: number): Promise<ModelVersionDoc | null>;
}

interface Entry {
  record: ModelRecord;
  /** When the read that produced `record` started: the entry is at most `now - readAt` old. */
  readAt: number;
  versions: Map<number, ModelVersionDoc>;
  refreshing: boolean;
}

/**
 * Each process's copy of the own models it serves, keyed by account and model id (another account's id is
 * never found under this account's key), so a prediction needs no MongoDB read. Bounds:
 * - a change made through this process (any write of ModelRepository) drops the entry at once, and a read
 *   that was in flight across that change is not stored;
 * - a change made by another instance is seen within `ttlMs`: an entry is served only while younger than
 *   that (counted from when its read started), and one past half its life is re-read in the background, so
 *   steady traffic never waits for a read;
 * - at most `maxEntries`, least recently used out.
 * A model that is not found is not cached (a model created elsewhere is served at once).
 */
export class ServingCache {
  private readonly source: ServingSource;
  private readonly ttlMs: number;
  private readonly maxEntries: number;
  private readonly now: () => number;
  private readonly onRefreshError: (err: unknown) => void;
  private readonly entries = new Map<string, Entry>();
  /** Bumped by every local change: a read that started before a change must not store what it read. */
  private epoch = 0;

  constructor(opts: { source: ServingSource; ttlMs: number; maxEntries: number; now?: () => number; onRefreshError?: (err: unknown) => void }) {
    this.source = opts.source;
    this.ttlMs = opts.ttlMs;
    this.maxEntries = opts.maxEntries;
    this.now = opts.now ?? (() => performance.now());
    this.onRefreshError = opts.onRefreshError ?? (() => {});
  }

  /** The model as a read at most `ttlMs` ago saw it; null when it does not exist (for this account). */
  async get(accountId: string, id: string): Promise<ServedModel | null> {
    const key = keyOf(accountId, id);
    const hit = this.entries.get(key);
    if (hit) {
      const age = this.now() - hit.readAt;
      if (age < this.ttlMs) {
        this.entries.delete(key);
        this.entries.set(key, hit);
        if (age >= this.ttlMs / 2 && !hit.refreshing) this.refresh(accountId, id, hit);
        return this.served(accountId, hit, false);
      }
    }
    return this.read(accountId, id);
  }

  /** A read made now, stored for the next requests. */
  async read(accountId: string, id: string): Promise<ServedModel | null> {
    const key = keyOf(accountId, id);
    const epoch = this.epoch;
    const readAt = this.now();
    const record = await this.source.model(accountId, id);
    const storable = epoch === this.epoch && this.ttlMs > 0;
    if (!record) {
      if (storable) this.entries.delete(key);
      return null;
    }
    const entry: Entry = { record, readAt, versions: this.entries.get(key)?.versions ?? new Map(), refreshing: false };
    if (storable) {
      this.entries.delete(key);
      this.entries.set(key, entry);
      while (this.entries.size > this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    }
    return this.served(accountId, entry, true);
  }

  /** The model changed here: the next request reads it again. */
  invalidate(accountId: string, id: string): void {
    this.epoch++;
    this.entries.delete(keyOf(accountId, id));
  }

  get size(): number {
    return this.entries.size;
  }

  private refresh(accountId: string, id: string, entry: Entry): void {
    entry.refreshing = true;
    this.read(accountId, id)
      .catch(this.onRefreshError)
      .finally(() => (entry.refreshing = false));
  }

  private served(accountId: string, entry: Entry, fresh: boolean): ServedModel {
    const id = entry.record.id;
    return {
      record: entry.record,
      fresh,
      version: async (n) => {
        const known = entry.versions.get(n);
        if (known) return known;
        const found = await this.source.version(accountId, id, n);
        if (found) entry.versions.set(n, found);
        return found;
      },
    };
  }
}

function keyOf(accountId: string, id: string): string {
  if (!accountId) throw new Error('accountId is required');
  return `${accountId}/${id}`;
}
