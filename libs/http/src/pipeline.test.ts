import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { pipeline } from './pipeline.ts';

const req = {} as Request;
const res = {} as Response;

/** Runs a pipeline and resolves with what it handed on (`undefined` for a plain next()), or 'answered'. */
function run(handlers: RequestHandler[], answers?: Promise<void>): Promise<unknown> {
  return new Promise((resolve) => {
    const done = ((err?: unknown) => resolve(err)) as NextFunction;
    pipeline(...handlers)(req, res, done);
    void answers?.then(() => resolve('answered'));
  });
}

it('runs the handlers in order and leaves with next() after the last', async () => {
  const seen: number[] = [];
  const step =
    (n: number): RequestHandler =>
    (_req, _res, next) => {
      seen.push(n);
      next();
    };
  await expect(run([step(1), step(2), step(3)])).resolves.toBeUndefined();
  expect(seen).toEqual([1, 2, 3]);
});

it('goes on after an async handler calls next() later', async () => {
  const seen: string[] = [];
  const late: RequestHandler = async (_req, _res, next) => {
    await new Promise((r) => setImmediate(r));
    seen.push('late');
    next();
  };
  await run([late, (_q, _s, next) => (seen.push('after'), next())]);
  expect(seen).toEqual(['late', 'after']);
});

it('leaves with the error of next(err), a throw or a rejected promise, and runs nothing after it', async () => {
  const after = jest.fn<void, Parameters<RequestHandler>>((_q, _s, next) => next());
  const boom = new Error('boom');
  await expect(run([(_q, _s, next) => next(boom), after])).resolves.toBe(boom);
  await expect(
    run([
      () => {
        throw boom;
      },
      after,
    ]),
  ).resolves.toBe(boom);
  await expect(run([async () => Promise.reject(boom), after])).resolves.toBe(boom);
  expect(after).not.toHaveBeenCalled();
  // The positive control: the same handler runs when nothing before it fails.
  await run([(_q, _s, next) => next(), after]);
  expect(after).toHaveBeenCalledTimes(1);
});

it('stops where a handler answers without calling next', async () => {
  const after = jest.fn();
  let answer!: () => void;
  const answered = new Promise<void>((r) => (answer = r));
  await expect(run([() => answer(), after], answered)).resolves.toBe('answered');
  expect(after).not.toHaveBeenCalled();
});
