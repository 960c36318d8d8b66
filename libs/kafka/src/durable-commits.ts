import type { Logger } from '@dap/logger';

/**
 * What a batch handler answers when it takes events over before they are durable (a webhook sent before its
 * record is stored): the consumer goes on fetching, and commits past these events only once `durable` has
 * resolved. A rejected `durable` means "not stored": the partition is read again from the first such event.
 */
export interface Taken {
  durable: Promise<void>;
}

export interface PartitionOffset {
  topic: string;
  partition: number;
  offset: string;
}

export interface DurableCommitsOptions {
  /** Commits these offsets (the next offset to read, as Kafka stores it). */
  commit: (offsets: PartitionOffset[]) => Promise<void>;
  /** Moves a partition's fetch position back, so its events from `offset` on are consumed again. */
  seek: (at: PartitionOffset) => void;
  logger: Logger;
  /** Events of one partition taken but not yet durable at most; a chunk beyond waits (default 10,000). */
  maxPendingPerPartition?: number;
  /** Commits go at most this often (default 50 ms): one round trip to the group coordinator per many chunks. */
  commitEveryMs?: number;
}

interface Chunk {
  from: string;
  /** The offset after the chunk's last: what is committed once it and every chunk before it are durable. */
  next: string;
  count: number;
  done: boolean;
  dropped: boolean;
}

interface Partition {
  topic: string;
  partition: number;
  chunks: Chunk[];
  pending: number;
  /** Durable up to here, not yet committed. */
  ready: string | null;
  waiters: Array<() => void>;
}

/**
 * Commits each partition's offset up to the last chunk whose events, and every earlier chunk's, are durable,
 * while the consumer reads on. A chunk taken before a rebalance (`reset`) is forgotten: the partition's next
 * owner reads from the committed offset, which covers only what was durable.
 */
export class DurableCommits {
  private readonly o: DurableCommitsOptions;
  private readonly maxPending: number;
  private readonly parts = new Map<string, Partition>();
  /** Bumped at each rebalance and at close: chunks taken before are ignored. */
  private gen = 0;
  private timer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> | null = null;
  private again = false;

  constructor(o: DurableCommitsOptions) {
    this.o = o;
    this.maxPending = o.maxPendingPerPartition ?? 10_000;
  }

  get generation(): number {
    return this.gen;
  }

  /**
   * Tracks a chunk (offsets `from`..`last`, `count` events) taken in `generation`; resolves once the partition
   * has room for more, so a consumer that stores slower than it reads stops fetching (heartbeating meanwhile with
   * `beat`, so that the group keeps its member).
   */
  async add(
    generation: number,
    at: { topic: string; partition: number; from: string; last: string; count: number },
    durable: Promise<unknown>,
    beat: () => Promise<void> = async () => {},
  ): Promise<void> {
    const { topic, partition, from, last, count } = at;
    if (generation !== this.gen) {
      durable.catch(() => {}); // read again by the partition's owner: its outcome does not matter here
      return;
    }
    const key = `${topic}\u0000${partition}`;
    let part = this.parts.get(key);
    if (!part) this.parts.set(key, (part = { topic, partition, chunks: [], pending: 0, ready: null, waiters: [] }));
    const p = part;
    const chunk: Chunk = { from, next: (BigInt(last) + 1n).toString(), count, done: false, dropped: false };
    p.chunks.push(chunk);
    p.pending += count;
    durable.then(
      () => {
        if (generation !== this.gen || chunk.dropped) return;
        chunk.done = true;
        this.advance(p);
      },
      (err: unknown) => {
        if (generation !== this.gen || chunk.dropped) return;
        this.o.logger.warn({ err, topic, partition, offset: from }, 'events were taken but not stored; reading them again');
        for (const c of p.chunks.splice(p.chunks.indexOf(chunk))) {
          c.dropped = true;
          p.pending -= c.count;
        }
        try {
          this.o.seek({ topic, partition, offset: from });
        } catch (e) {
          // Not running any more: the next start reads from the committed offset anyway.
          this.o.logger.warn({ err: e, topic, partition }, 'could not move the partition back');
        }
        this.wake(p);
        this.advance(p);
      },
    );
    while (p.pending > this.maxPending && generation === this.gen) {
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, 1_000);
        p.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
      await beat();
    }
  }

  /** The group rebalanced: what was taken before is the new owners' to read again from the committed offsets. */
  reset(): void {
    this.gen++;
    for (const p of this.parts.values()) this.wake(p, true);
    this.parts.clear();
  }

  /** Waits until everything taken is durable (at most `timeoutMs`), then commits it. */
  async drain(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while ([...this.parts.values()].some((p) => p.chunks.length) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    await this.flush();
  }

  /** Commits what is durable now, and stops: chunks still pending are read again by the partitions' next owners. */
  async close(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.flush();
    this.reset();
  }

  /** Commits every partition's durable progress now (and waits for a commit already under way). */
  async flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.again = true;
    while (this.flushing) await this.flushing;
    if (!this.again) return;
    this.flushing = this.commitReady().finally(() => (this.flushing = null));
    await this.flushing;
  }

  private advance(p: Partition): void {
    let moved = false;
    while (p.chunks[0]?.done) {
      const c = p.chunks.shift()!;
      p.pending -= c.count;
      p.ready = c.next;
      moved = true;
    }
    this.wake(p);
    if (moved && !this.timer) this.timer = setTimeout(() => void this.flush(), this.o.commitEveryMs ?? 50);
  }

  private wake(p: Partition, all = false): void {
    if (!all && p.pending > this.maxPending) return;
    for (const w of p.waiters.splice(0)) w();
  }

  private async commitReady(): Promise<void> {
    this.again = false;
    const ready = [...this.parts.values()].filter((p) => p.ready !== null);
    if (!ready.length) return;
    const offsets = ready.map((p) => ({ topic: p.topic, partition: p.partition, offset: p.ready! }));
    for (const p of ready) p.ready = null;
    try {
      await this.o.commit(offsets);
    } catch (err) {
      // A rebalance under way refuses it (the next owner reads from the last commit, so nothing is lost);
      // otherwise the next flush tries again.
      this.o.logger.warn({ err, offsets }, 'committing durable offsets failed');
      offsets.forEach((o, i) => (ready[i]!.ready ??= o.offset));
    }
  }
}
