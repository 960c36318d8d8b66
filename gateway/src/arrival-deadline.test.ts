import { EventEmitter } from 'node:events';
import type { NextFunction, Request, Response } from 'express';
import { arrivalDeadline } from './app.ts';

/** A request as the middleware sees it: its operation, whether its body has arrived, its socket and idle timer. */
function fakeRequest(upload: boolean, headers: Record<string, string> = { 'content-length': '1200' }) {
  const req = Object.assign(new EventEmitter(), {
    operation: upload ? { upload: { mediaTypes: ['text/csv'] } } : { operationId: 'createSource' },
    headers,
    complete: false,
    socket: Object.assign(new EventEmitter(), { destroy: jest.fn(), end: jest.fn() }),
    resume: jest.fn(),
    destroy: jest.fn(),
    setTimeout: jest.fn(),
  });
  const res = new EventEmitter();
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

it('sets no deadline for a request without a body, which is whole once its headers are in', () => {
  const bodyless = fakeRequest(false, {});
  bodyless.run();
  expect(jest.getTimerCount()).toBe(0);
  // The positive control: a chunked body gets the deadline as a declared length does.
  const chunked = fakeRequest(false, { 'transfer-encoding': 'chunked' });
  chunked.run();
  expect(jest.getTimerCount()).toBe(1);
});

it('leaves alone a request whose body has arrived', () => {
  const { req, run } = fakeRequest(false);
  run();
  req.complete = true;
  req.emit('end');
  jest.advanceTimersByTime(600_000);
  expect(req.socket.destroy).not.toHaveBeenCalled();
});

it('holds an upload to an idle timeout instead, and after a refusal drops the rest of its body for 2 s, then closes', () => {
  const { req, res, run } = fakeRequest(true);
  run();
  jest.advanceTimersByTime(600_000);
  expect(req.socket.destroy).not.toHaveBeenCalled();
  expect(req.setTimeout).toHaveBeenCalledWith(60_000, expect.any(Function));
  const onIdle = req.setTimeout.mock.calls[0]![1] as () => void;
  onIdle();
  expect(req.destroy).toHaveBeenCalledTimes(1);

  // Answered (a 401, a 413…) with the body still coming: it is read and dropped, then the connection closes.
  res.emit('finish');
  expect(req.resume).toHaveBeenCalled();
  jest.advanceTimersByTime(1_999);
  expect(req.socket.destroy).not.toHaveBeenCalled();
  jest.advanceTimersByTime(1);
  expect(req.socket.destroy).toHaveBeenCalledTimes(1);
});

it('keeps the connection of an upload whose body ends within the linger, or that was whole when answered', () => {
  const late = fakeRequest(true);
  late.run();
  late.res.emit('finish');
  late.req.complete = true;
  late.req.emit('end');
  jest.advanceTimersByTime(10_000);
  expect(late.req.socket.destroy).not.toHaveBeenCalled();

  const whole = fakeRequest(true);
  whole.run();
  whole.req.complete = true;
  whole.res.emit('finish');
  jest.advanceTimersByTime(10_000);
  expect(whole.req.resume).not.toHaveBeenCalled();
  expect(whole.req.socket.destroy).not.toHaveBeenCalled();
});
