import type { Logger } from '@dap/logger';

type Job = () => Promise<void>;

interface Entry {
  key: string;
  group: string;
  job: Job;
}

/**
 * Runs keyed jobs in-process, at most `concurrency` at once and at most `perGroup` of one group (an account)
 * at once, taking groups in turn: a group with a long backlog gets one slot after another only while no other
 * group is waiting, so one tenant's slow jobs never hold every slot. A key already queued is not queued twice;
 * a key enqueued while it runs runs once more afterwards, so a request made mid-run is never lost.
 */
export class JobRunner {
  private readonly concurrency: number;
  private readonly perGroup: number;
  private readonly logger: Logger;
  /** Each group's waiting jobs, oldest first. */
  private readonly queues = new Map<string, Entry[]>();
  /** When each group last got a slot (a counter); the group served longest ago goes next, one never served first. */
  private readonly lastServed = new Map<string, number>();
  private served = 0;
  private readonly queued = new Set<string>();
  private readonly running = new Map<string, Promise<void>>();
  private readonly runningByGroup = new Map<string, number>();
  private readonly again = new Map<string, Entry>();
  private stopped = false;

  constructor(opts: { concurrency: number; perGroup?: number; logger: Logger }) {
    this.concurrency = opts.concurrency;
    this.perGroup = Math.max(1, Math.min(opts.perGroup ?? opts.concurrency, opts.concurrency || 1));
    this.logger = opts.logger;
  }

  /** Returns false when the job was not accepted (stopped, or this runner runs nothing). */
  enqueue(group: string, key: string, job: Job): boolean {
    if (this.stopped || this.concurrency === 0) return false;
    if (this.running.has(key)) {
      this.again.set(key, { key, group, job });
      return true;
    }
    if (this.queued.has(key)) return true;
    this.queued.add(key);
    const queue = this.queues.get(group);
    if (queue) queue.push({ key, group, job });
    else this.queues.set(group, [{ key, group, job }]);
    this.pump();
    return true;
  }

  get activeCount(): number {
    return this.running.size;
  }

  get queuedCount(): number {
    return this.queued.size;
  }

  /** Takes no new jobs, drops the queue (its work is still pending in the database) and waits for running jobs. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.queues.clear();
    this.lastServed.clear();
    this.queued.clear();
    this.again.clear();
    while (this.running.size) await Promise.allSettled([...this.running.values()]);
  }

  /** The next job by round robin: of the groups with work waiting and a slot of their own free, the one served longest ago. */
  private next(): Entry | null {
    let pick: string | null = null;
    let pickServed = Infinity;
    for (const group of this.queues.keys()) {
      if ((this.runningByGroup.get(group) ?? 0) >= this.perGroup) continue;
      const served = this.lastServed.get(group) ?? -1;
      if (served < pickServed) [pick, pickServed] = [group, served];
    }
    if (pick === null) return null;
    const queue = this.queues.get(pick)!;
    const entry = queue.shift()!;
    if (!queue.length) this.queues.delete(pick);
    this.lastServed.set(pick, this.served++);
    return entry;
  }

  private pump(): void {
    while (!this.stopped && this.running.size < this.concurrency) {
      const entry = this.next();
      if (!entry) return;
      const { key, group, job } = entry;
      this.queued.delete(key);
      this.runningByGroup.set(group, (this.runningByGroup.get(group) ?? 0) + 1);
      const run = Promise.resolve()
        .then(job)
        .catch((err: unknown) => this.logger.error({ err, job: key }, 'job failed'))
        .finally(() => {
          this.running.delete(key);
          const left = (this.runningByGroup.get(group) ?? 1) - 1;
          if (left > 0) this.runningByGroup.set(group, left);
          else this.runningByGroup.delete(group);
          const again = this.again.get(key);
          this.again.delete(key);
          if (again) this.enqueue(again.group, again.key, again.job);
          if (!this.runningByGroup.has(group) && !this.queues.has(group)) this.lastServed.delete(group); // idle: nothing to remember
          this.pump();
        });
      this.running.set(key, run);
    }
  }
}
