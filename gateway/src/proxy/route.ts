import type { NextFunction, Request, Response } from 'express';
import { matchOperation } from '@dap/contracts';
import { AppError } from '@dap/http';

/** Finds the operation for the request (404/405 otherwise) and checks the key's scope for it (403). */
export function routeOperation(req: Request, _res: Response, next: NextFunction): void {
  const { match, pathKnown } = matchOperation(req.method, req.path.replace(/^\/v1/, ''));
  if (!match) {
    return next(pathKnown ? new AppError('method_not_allowed', `${req.method} is not allowed on ${req.path}`) : new AppError('not_found', `no route for ${req.method} ${req.path}`));
  }
  const needed = match.operation.scope;
  if (!req.apiKey!.scopes.includes(needed)) {
    return next(new AppError('forbidden', `the API key lacks the ${needed} scope needed for ${match.operation.operationId}`));
  }
  req.targetService = match.operation.service;
  next();
}
