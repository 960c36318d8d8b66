import { backoffDelay } from './index.ts';

describe('backoffDelay', () => {
  it('doubles from the base up to the cap, without jitter by default', () => {
    const policy = { baseMs: 200, capMs: 5_000 };
    expect([0, 1, 2, 3, 4, 5, 10].map((a) => backoffDelay(a, policy))).toEqual([200, 400, 800, 1_600, 3_200, 5_000, 5_000]);
  });

  it('scales by a factor drawn from the jitter range', () => {
    const policy = { baseMs: 1_000, capMs: 10_000, jitter: [0.8, 1.2] as const };
    expect(backoffDelay(1, policy, () => 0)).toBe(1_600);
    expect(backoffDelay(1, policy, () => 0.5)).toBe(2_000);
    expect(backoffDelay(1, policy, () => 0.999999)).toBe(2_400);
  });

  it('treats a negative attempt as the first', () => {
    expect(backoffDelay(-3, { baseMs: 100, capMs: 1_000 })).toBe(100);
  });
});
