import { DEFAULT_RETRY_SCHEDULE_MS, parseRetrySchedule } from '../config.ts';
import { nextDelayMs, parseRetryAfter, retryDelayWithPushback, withJitter } from './retry-schedule.ts';

describe('retry schedule', () => {
  it('defaults to the documented schedule: immediately, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h', () => {
    expect([...DEFAULT_RETRY_SCHEDULE_MS]).toEqual([0, 5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000]);
  });

  it('gives the delay after each failed attempt and none after the last', () => {
    const noJitter = () => 0.5;
    const delays = [1, 2, 3, 4, 5, 6, 7].map((n) => nextDelayMs(DEFAULT_RETRY_SCHEDULE_MS, n, noJitter));
    expect(delays).toEqual([5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000]);
    expect(nextDelayMs(DEFAULT_RETRY_SCHEDULE_MS, 8, noJitter)).toBeNull();
    expect(nextDelayMs([0, 200, 400], 3)).toBeNull();
  });

  it('jitters by at most ±10%', () => {
    expect(withJitter(1_000, () => 0)).toBe(900);
    expect(withJitter(1_000, () => 0.999999)).toBe(1_100);
    expect(withJitter(0, () => 0)).toBe(0);
    for (let i = 0; i < 200; i++) {
      const d = nextDelayMs(DEFAULT_RETRY_SCHEDULE_MS, 2)!;
      expect(d).toBeGreaterThanOrEqual(270_000);
      expect(d).toBeLessThanOrEqual(330_000);
    }
  });

  it('parses a compressed schedule from config and refuses a bad one', () => {
    expect(parseRetrySchedule('0,200, 400')).toEqual([0, 200, 400]);
    expect(parseRetrySchedule('0,-5')).toBeNull();
    expect(parseRetrySchedule('0,abc')).toBeNull();
    expect(parseRetrySchedule('')).toBeNull();
  });
});

describe('Retry-After', () => {
  const now = Date.parse('2026-11-27T10:00:00Z');

  it.each([
    ['120', 120_000],
    [' 0 ', 0],
    ['Fri, 27 Nov 2026 10:02:00 GMT', 120_000],
    ['Fri, 27 Nov 2026 09:00:00 GMT', 0], // a date in the past: no wait
    ['-5', null],
    ['1.5', null],
    ['soon', null],
    ['', null],
    [undefined, null],
  ])('reads %p as %p ms', (value, expected) => {
    expect(parseRetryAfter(value, now)).toBe(expected);
  });

  it('waits the longer of the schedule and the bounded Retry-After, and reports the bounded value', () => {
    expect(retryDelayWithPushback(5_000, 120_000, 3_600_000)).toEqual({ delayMs: 120_000, retryAfterMs: 120_000 });
    expect(retryDelayWithPushback(5_000, 36_000_000, 3_600_000)).toEqual({ delayMs: 3_600_000, retryAfterMs: 3_600_000 });
    expect(retryDelayWithPushback(300_000, 1_000, 3_600_000)).toEqual({ delayMs: 300_000, retryAfterMs: 1_000 });
    expect(retryDelayWithPushback(5_000, null, 3_600_000)).toEqual({ delayMs: 5_000, retryAfterMs: null });
  });
});
