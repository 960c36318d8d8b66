import { describeError, retryDuringStartup, StartupError, type StartupRetry } from './startup.ts';

/** A fake clock: sleeping advances time at once, so a 30-s start-up period takes no real time. */
function harness(failures: unknown[], timeoutMs = 30_000) {
  let t = 0;
  const slept: number[] = [];
  const warnings: { obj: Record<string, unknown>; msg: string }[] = [];
  let calls = 0;
  const opts: StartupRetry<string> = {
    what: 'MongoDB at mongodb://db:27017',
    timeoutMs,
    retriable: (err) => (err as Error).name !== 'AuthError',
    logger: { warn: (obj, msg) => warnings.push({ obj: obj as Record<string, unknown>, msg }) },
    attempt: async () => {
      calls++;
      t += 3_000; // each attempt waits out a 3-s server selection
      const failure = failures.shift();
      if (failure) throw failure;
      return 'connected';
    },
    now: () => t,
    sleep: async (ms) => {
      slept.push(ms);
      t += ms;
    },
    random: () => 0.5, // no jitter: 0.8 + 0.4 × 0.5 = 1
  };
  return { opts, slept, warnings, calls: () => calls, elapsed: () => t };
}

const unreachable = () => Object.assign(new Error('connect ECONNREFUSED 10.0.0.5:27017'), { name: 'MongoServerSelectionError' });

describe('retryDuringStartup', () => {
  it('retries a dependency that answers late, with growing delays, logging each retry', async () => {
    const h = harness([unreachable(), unreachable(), unreachable()]);
    await expect(retryDuringStartup(h.opts)).resolves.toBe('connected');
    expect(h.calls()).toBe(4);
    expect(h.slept).toEqual([250, 500, 1_000]);
    expect(h.warnings.map((w) => w.obj.attempt)).toEqual([1, 2, 3]);
    expect(h.warnings[0]).toEqual({
      msg: 'MongoDB at mongodb://db:27017 not reachable yet; retrying',
      obj: { attempt: 1, retryInMs: 250, elapsedMs: 3_000, startupTimeoutMs: 30_000, err: 'MongoServerSelectionError: connect ECONNREFUSED 10.0.0.5:27017' },
    });
  });

  it('gives up after the start-up period with the last error, and starts no attempt after it', async () => {
    const h = harness(Array.from({ length: 100 }, unreachable), 30_000);
    const err = await retryDuringStartup(h.opts).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StartupError);
    expect((err as Error).message).toMatch(
      /^MongoDB at mongodb:\/\/db:27017 did not answer within the start-up period of 30000 ms \(\d+ attempts\); last error: MongoServerSelectionError: connect ECONNREFUSED/,
    );
    expect(((err as Error).cause as Error).name).toBe('MongoServerSelectionError');
    // 3-s attempts between doubling delays; the last sleep is cut to end at the deadline, where the last
    // attempt starts: the whole wait is the period plus one attempt at most.
    expect(h.slept).toEqual([250, 500, 1_000, 2_000, 4_000, 4_250]);
    expect(h.calls()).toBe(7);
    expect(h.warnings).toHaveLength(6);
    expect((err as Error).message).toContain('(7 attempts)');
    expect(h.elapsed()).toBe(30_000 + 3_000);
  });

  it('caps the delay at 5 s', async () => {
    const h = harness(Array.from({ length: 100 }, unreachable), 120_000);
    await expect(retryDuringStartup(h.opts)).rejects.toThrow(StartupError);
    expect(h.slept.slice(0, 8)).toEqual([250, 500, 1_000, 2_000, 4_000, 5_000, 5_000, 5_000]);
  });

  it('a period of 0 tries exactly once', async () => {
    const h = harness([unreachable()], 0);
    await expect(retryDuringStartup(h.opts)).rejects.toThrow(/within the start-up period of 0 ms \(1 attempts\)/);
    expect(h.calls()).toBe(1);
    expect(h.warnings).toEqual([]);
  });

  it('fails at once on an error waiting cannot fix', async () => {
    const h = harness([Object.assign(new Error('Authentication failed.'), { name: 'AuthError' })]);
    await expect(retryDuringStartup(h.opts)).rejects.toThrow('MongoDB at mongodb://db:27017: AuthError: Authentication failed. (not retried: waiting cannot fix this)');
    expect(h.calls()).toBe(1);
    expect(h.slept).toEqual([]);
  });

  it('jitters each delay within ±20 %', async () => {
    const h = harness([unreachable(), unreachable()]);
    let r = 0;
    const values = [0, 1];
    h.opts.random = () => values[r++]!;
    await retryDuringStartup(h.opts);
    expect(h.slept).toEqual([200, 600]);
  });
});

describe('describeError', () => {
  it('keeps credentials of URLs in error messages out of logs', () => {
    const e = Object.assign(new Error('failed to reach mongodb://admin:hunter2@db:27017/app and redis://:pw@cache:6379'), { name: 'MongoParseError' });
    expect(describeError(e)).toBe('MongoParseError: failed to reach mongodb://***@db:27017/app and redis://***@cache:6379');
  });

  it('describes non-errors and caps the length', () => {
    expect(describeError('plain')).toBe('plain');
    expect(describeError(new Error('x'.repeat(2_000))).length).toBe(500);
  });
});
