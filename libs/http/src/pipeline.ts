import type { NextFunction, Request, RequestHandler, Response } from 'express';

/**
 * Middleware run in order as one handler, for a hot path: the express router matches a path, merges
 * params and restores `req.url` at every layer, a cost each request pays once per `use` it passes. Here a
 * handler's `next()` goes straight to the following one; `next(err)`, a throw or a rejected promise leave the
 * pipeline with the error, and the end of the list leaves it with `next()`.
 */
export function pipeline(...handlers: RequestHandler[]): RequestHandler {
  const n = handlers.length;
  return (req: Request, res: Response, done: NextFunction): void => {
    let i = 0;
    const next = (err?: unknown): void => {
      if (err) return done(err);
      if (i === n) return done();
      const handler = handlers[i++]!;
      try {
        const result = handler(req, res, next) as unknown;
        if (result instanceof Promise) result.catch(done);
      } catch (e) {
        done(e);
      }
    };
    next();
  };
}
