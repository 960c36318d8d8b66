import { Router, type Request, type Response } from 'express';
import { changePasswordBody, loginBody, passwordResetBody, SESSION_COOKIE, signupBody } from '@dap/contracts';
import { callerOf, parseOr400 } from '@dap/http';
import { sessionRequired } from '../domain/errors.ts';
import type { IdentityService, IssuedSession } from '../domain/identity.service.ts';
import { sessionDto } from './dto.ts';

/** HttpOnly so scripts cannot read it, SameSite=Lax against cross-site posts, Secure behind TLS. */
function setSessionCookie(req: Request, res: Response, s: IssuedSession | null, secureAlways: boolean): void {
  const secure = secureAlways || req.header('x-forwarded-proto') === 'https' ? '; Secure' : '';
  const value = s ? `${s.token}; Max-Age=${Math.floor((s.expiresAt.getTime() - Date.now()) / 1000)}` : '; Max-Age=0';
  res.setHeader('Set-Cookie', `${SESSION_COOKIE}=${value}; Path=/; HttpOnly; SameSite=Lax${secure}`);
}

export function authRoutes(identity: IdentityService, opts: { secureCookies: boolean }): Router {
  const router = Router();
  router.post('/signup', async (req, res) => {
    const body = parseOr400(signupBody, req.body, 'body');
    const session = await identity.signup(body);
    setSessionCookie(req, res, session, opts.secureCookies);
    res.status(201).location('/v1/auth/session').json(sessionDto(session));
  });
  router.post('/login', async (req, res) => {
    const body = parseOr400(loginBody, req.body, 'body');
    const session = await identity.login(body);
    setSessionCookie(req, res, session, opts.secureCookies);
    res.json(sessionDto(session));
  });
  router.post('/logout', async (req, res) => {
    const caller = callerOf(req);
    if (!caller.sessionId) throw sessionRequired('logout needs a dashboard session');
    await identity.logout(caller.accountId, caller.sessionId);
    setSessionCookie(req, res, null, opts.secureCookies);
    res.status(204).end();
  });
  router.post('/password', async (req, res) => {
    const caller = callerOf(req);
    if (!caller.sessionId || !caller.userId) throw sessionRequired('changing the password needs a dashboard session');
    const body = parseOr400(changePasswordBody, req.body, 'body');
    await identity.changePassword(caller.accountId, caller.userId, caller.sessionId, body);
    res.status(204).end();
  });
  router.post('/password-reset', async (req, res) => {
    const body = parseOr400(passwordResetBody, req.body, 'body');
    await identity.resetPassword(body);
    res.status(204).end();
  });
  router.get('/session', async (req, res) => {
    const caller = callerOf(req);
    if (!caller.sessionId) throw sessionRequired('this needs a dashboard session');
    res.json(sessionDto(await identity.describe(caller.accountId, caller.sessionId)));
  });
  return router;
}
