import { EventEmitter } from 'node:events';
import type { NextFunction, Request, Response } from 'express';
import { arrivalDeadline } from './app.ts';

/** A request as the middleware sees it: its operation, whether its body has arrived, its socket and idle timer. */
function fakeRequest(upload: boolean) {
  const req = Object.assign(new EventEmitter(), {
    operation: upload ? { upload: { mediaTypes: ['text/csv'] } } : { operationId: 'createSource' },
    complete: false,
    socket: { destroy: jest.fn() },
    destroy: jest.fn(),
    setTimeout: jest.fn(),
  });
  const res = { setHeader: jest.fn() };
  return {
    req,
    res,
    run: () => arrivalDeadline({ requestTimeoutMs: 120_000, uploadIdleMs: 60_000 })(req as unknown as Request, res as unknown as Response, jest.fn() as NextFunction),
  };
}

beforeEach(() => jest.useFakeTimers());
afterEach(() => jest.useRealTimers());

it('gives a JSON request 120 s to arrive whole, then drops its connection', () => {
  const { req, run } = fakeRequest(false);
  run();
  jest.advanceTimersByTime(119_999);
  expect(req.socket.destroy).not.toHaveBeenCalled();
  jest.advanceTimersByTime(1);
  expect(req.socket.destroy).toHaveBeenCalledTimes(1);
});

it('leaves alone a request whose body has arrived', () => {
  const { req, run } = fakeRequest(false);
  run();
  req.complete = true;
  req.emit('end');
  jest.advanceTimersByTime(600_000);
  expect(req.socket.destroy).not.toHaveBeenCalled();
});

it('holds an upload to an idle timeout instead, and closes its connection on a refusal', () => {
  const { req, res, run } = fakeRequest(true);
  run();
  jest.advanceTimersByTime(600_000);
  expect(req.socket.destroy).not.toHaveBeenCalled();
  expect(req.setTimeout).toHaveBeenCalledWith(60_000, expect.any(Function));
  const onIdle = req.setTimeout.mock.calls[0]![1] as () => void;
  onIdle();
  expect(req.destroy).toHaveBeenCalledTimes(1);
  expect(res.setHeader).toHaveBeenCalledWith('Connection', 'close');
});
