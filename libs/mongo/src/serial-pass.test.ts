import { SerialPass } from './serial-pass.ts';

/** A pass whose runs the test ends one by one. */
function controlledPass() {
  const ends: Array<(err?: Error) => void> = [];
  let started = 0;
  const pass = () =>
    new Promise<void>((resolve, reject) => {
      started++;
      ends.push((err) => (err ? reject(err) : resolve()));
    });
  return {
    pass,
    started: () => started,
    /** Ends the oldest running pass and lets its continuation run. */
    end: async (err?: Error) => {
      ends.shift()!(err);
      await new Promise((r) => setImmediate(r));
    },
  };
}

describe('SerialPass', () => {
  test('requests during a pass fold into exactly one more pass after it', async () => {
    const c = controlledPass();
    const serial = new SerialPass({ pass: c.pass, onError: () => {} });
    serial.request();
    serial.request();
    serial.request();
    expect(c.started()).toBe(1);
    await c.end();
    expect(c.started()).toBe(2);
    await c.end();
    expect(c.started()).toBe(2);
    serial.request();
    expect(c.started()).toBe(3);
    await c.end();
  });

  test('a failed pass is reported and retried after retryMs; requests meanwhile wait for the retry', async () => {
    jest.useFakeTimers({ doNotFake: ['setImmediate'] });
    try {
      const c = controlledPass();
      const errors: unknown[] = [];
      const serial = new SerialPass({ pass: c.pass, onError: (err) => errors.push(err), retryMs: 1_000 });
      serial.request();
      await c.end(new Error('down'));
      expect(errors.map((e) => (e as Error).message)).toEqual(['down']);
      serial.request();
      expect(c.started()).toBe(1);
      jest.advanceTimersByTime(999);
      expect(c.started()).toBe(1);
      jest.advanceTimersByTime(1);
      expect(c.started()).toBe(2);
      await c.end();
      await serial.stop();
    } finally {
      jest.useRealTimers();
    }
  });

  test('without retryMs the next request runs a failed pass again at once', async () => {
    const c = controlledPass();
    const errors: unknown[] = [];
    const serial = new SerialPass({ pass: c.pass, onError: (err) => errors.push(err) });
    serial.request();
    await c.end(new Error('once'));
    serial.request();
    expect(c.started()).toBe(2);
    await c.end();
    expect(errors).toHaveLength(1);
  });

  test('flush waits for the running pass, runs one more, and passes its failure on', async () => {
    const c = controlledPass();
    const serial = new SerialPass({ pass: c.pass, onError: () => {} });
    serial.request();
    const flushed = serial.flush();
    let done = false;
    void flushed.then(
      () => (done = true),
      () => (done = true),
    );
    await c.end();
    expect(c.started()).toBe(2);
    expect(done).toBe(false);
    // A request during the flush's pass runs after it, not beside it.
    serial.request();
    expect(c.started()).toBe(2);
    await c.end(new Error('flush failed'));
    await expect(flushed).rejects.toThrow('flush failed');
    expect(c.started()).toBe(3);
    await c.end();
  });

  test('stop lets the running pass finish, then starts none; flush still drains', async () => {
    const c = controlledPass();
    const serial = new SerialPass({ pass: c.pass, onError: () => {}, retryMs: 10 });
    serial.request();
    serial.request();
    let stopped = false;
    const stopping = serial.stop().then(() => (stopped = true));
    await new Promise((r) => setImmediate(r));
    expect(stopped).toBe(false);
    await c.end();
    await stopping;
    expect(c.started()).toBe(1);
    serial.request();
    expect(c.started()).toBe(1);
    const flushed = serial.flush();
    expect(c.started()).toBe(2);
    await c.end();
    await flushed;
  });
});
