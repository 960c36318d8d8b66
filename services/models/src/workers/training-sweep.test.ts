import { Lifecycle } from '@dap/lifecycle';
import { startTrainingSweep } from './training-sweep.ts';

describe('startTrainingSweep', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  const lifecycle = () => new Lifecycle({ warn: () => undefined });

  it('sweeps at start-up and every half lease on an instance that trains, until the service stops', async () => {
    const life = lifecycle();
    const sweep = jest.fn(async () => undefined);
    startTrainingSweep(life, { sweep }, 10_000);
    await jest.advanceTimersByTimeAsync(0); // the first run starts on the next microtask
    expect(sweep).toHaveBeenCalledTimes(1);
    await jest.advanceTimersByTimeAsync(4_999);
    expect(sweep).toHaveBeenCalledTimes(1);
    await jest.advanceTimersByTimeAsync(1);
    expect(sweep).toHaveBeenCalledTimes(2);
    await jest.advanceTimersByTimeAsync(10_000);
    expect(sweep).toHaveBeenCalledTimes(4);
    expect(jest.getTimerCount()).toBe(1); // positive control for the instance without workers below
    await life.stop();
    await jest.advanceTimersByTimeAsync(60_000);
    expect(sweep).toHaveBeenCalledTimes(4);
    expect(jest.getTimerCount()).toBe(0);
  });

  it('sweeps at least every 500 ms however short the lease', async () => {
    const life = lifecycle();
    const sweep = jest.fn(async () => undefined);
    startTrainingSweep(life, { sweep }, 200);
    await jest.advanceTimersByTimeAsync(499);
    expect(sweep).toHaveBeenCalledTimes(1);
    await jest.advanceTimersByTimeAsync(1);
    expect(sweep).toHaveBeenCalledTimes(2);
    await life.stop();
  });

  it('never sweeps on an instance without training workers', async () => {
    const life = lifecycle();
    startTrainingSweep(life, null, 10_000);
    await jest.advanceTimersByTimeAsync(60_000);
    expect(jest.getTimerCount()).toBe(0);
    await life.stop();
  });
});
