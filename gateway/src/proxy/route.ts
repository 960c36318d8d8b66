import type { NextFunction, Request, Response } from 'express';
import { allowedMethods, matchOperation } from '@dap/contracts';
import { AppError, UNMATCHED_ROUTE } from '@dap/http';

/** Looks up the operation first: it decides how the caller must authenticate. Unknown paths still need credentials. */
export function findOperation(req: Request, res: Response, next: NextFunction): void {
  req.operation = matchOperation(req.method, req.path).match?.operation ?? null;
  res.locals.metricsRoute = req.operation ? `/v1${req.operation.path}` : UNMATCHED_ROUTE;
  next();
}

/** After authentication: 404/405 for unknown routes, 403 when an API key lacks the operation's scope. */
export function authorizeOperation(req: Request, _res: Response, next: NextFunction): void {
  const op = req.operation;
  if (!op) {
    const allowed = allowedMethods(req.path);
    return next(
      allowed.length
        ? new AppError('method_not_allowed', `${req.method} is not allowed on /v1${req.path}; it takes ${allowed.join(', ')}`, { headers: { Allow: allowed.join(', ') } })
        : new AppError('not_found', `no route for ${req.method} /v1${req.path}`),
    );
  }
  const principal = req.principal!;
  if (principal.kind === 'key' && op.scope && !principal.scopes.includes(op.scope)) {
    return next(new AppError('forbidden', `the API key lacks the ${op.scope} scope needed for ${op.operationId}`));
  }
  next();
}
