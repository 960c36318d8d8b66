import { createHash, randomBytes } from 'node:crypto';
import { newId, PLAN_LIMITS, type VerifiedSession } from '@dap/contracts';
import type { AccountDoc } from '../persistence/account.repository.ts';
import type { ResetTokenRepository } from '../persistence/reset-token.repository.ts';
import type { SessionRepository } from '../persistence/session.repository.ts';
import type { UserDoc, UserRepository } from '../persistence/user.repository.ts';
import type { AccountsService } from './accounts.service.ts';
import { currentPasswordWrong, emailTaken, loginFailed, resetTokenInvalid, sessionEnded, userNotFound } from './errors.ts';
import { DUMMY_PASSWORD_HASH, hashPassword, verifyPassword } from './password.ts';

export const SESSION_TTL_MS = 7 * 24 * 3600 * 1000;
/** How long an operator-issued password reset link works. */
export const RESET_LINK_TTL_MS = 3600 * 1000;

export interface IssuedSession {
  token: string;
  expiresAt: Date;
  user: UserDoc;
  account: AccountDoc;
  csrfToken: string;
}

export const hashToken = (token: string) => createHash('sha256').update(token).digest('hex');

/** Dashboard identity: owners sign up and log in; a session is an opaque cookie whose hash we store. */
export class IdentityService {
  private readonly accounts: AccountsService;
  private readonly users: UserRepository;
  private readonly sessions: SessionRepository;
  private readonly resets: ResetTokenRepository;
  private readonly now: () => number;

  constructor(accounts: AccountsService, users: UserRepository, sessions: SessionRepository, resets: ResetTokenRepository, now: () => number = Date.now) {
    this.accounts = accounts;
    this.users = users;
    this.sessions = sessions;
    this.resets = resets;
    this.now = now;
  }

  async signup(input: { email: string; password: string; accountName: string }): Promise<IssuedSession> {
    if (await this.users.findByEmail(input.email)) throw emailTaken();
    const passwordHash = await hashPassword(input.password);
    const account = await this.accounts.createAccount({ name: input.accountName, plan: 'starter', email: input.email });
    const userId = newId('usr');
    let user: UserDoc;
    try {
      user = await this.users.insert(account._id, { _id: userId, email: input.email, passwordHash, createdAt: new Date() });
    } catch (err) {
      if ((err as { code?: number }).code === 11000) throw emailTaken();
      throw err;
    }
    return this.issue(user, account);
  }

  async login(input: { email: string; password: string }): Promise<IssuedSession> {
    const user = await this.users.findByEmail(input.email);
    const ok = await verifyPassword(input.password, user?.passwordHash ?? DUMMY_PASSWORD_HASH);
    if (!user || !ok) throw loginFailed();
    return this.issue(user, await this.accounts.getAccount(user.accountId));
  }

  /** Checks the current password, re-hashes, and ends the user's other sessions and reset links; `sessionId` stays. */
  async changePassword(accountId: string, userId: string, sessionId: string, input: { currentPassword: string; newPassword: string }): Promise<void> {
    const user = await this.users.findById(accountId, userId);
    if (!user) throw sessionEnded();
    if (!(await verifyPassword(input.currentPassword, user.passwordHash))) throw currentPasswordWrong();
    await this.setPassword(user, input.newPassword, sessionId);
  }

  /** A one-time reset link's token for the user with this e-mail; a new link replaces the user's older ones. */
  async issueResetToken(email: string): Promise<{ token: string; expiresAt: Date; userId: string; accountId: string }> {
    const user = await this.users.findByEmail(email.trim().toLowerCase());
    if (!user) throw userNotFound();
    await this.resets.removeForUser(user.accountId, user._id);
    const token = randomBytes(32).toString('base64url');
    const createdAt = new Date(this.now());
    const expiresAt = new Date(createdAt.getTime() + RESET_LINK_TTL_MS);
    await this.resets.insert(user.accountId, { _id: newId('pwr'), userId: user._id, tokenHash: hashToken(token), createdAt, expiresAt });
    return { token, expiresAt, userId: user._id, accountId: user.accountId };
  }

  /** Uses up a reset token and sets the new password; every session of the user ends. */
  async resetPassword(input: { token: string; newPassword: string }): Promise<void> {
    const reset = await this.resets.consume(hashToken(input.token));
    if (!reset || reset.expiresAt.getTime() <= this.now()) throw resetTokenInvalid();
    const user = await this.users.findById(reset.accountId, reset.userId);
    if (!user) throw resetTokenInvalid();
    await this.setPassword(user, input.newPassword);
  }

  private async setPassword(user: UserDoc, password: string, keepSession?: string): Promise<void> {
    const passwordHash = await hashPassword(password);
    await this.users.coll.update(user.accountId, user._id, { passwordHash });
    await Promise.all([this.sessions.removeForUser(user.accountId, user._id, keepSession), this.resets.removeForUser(user.accountId, user._id)]);
  }

  async logout(accountId: string, sessionId: string): Promise<void> {
    await this.sessions.remove(accountId, sessionId);
  }

  async describe(accountId: string, sessionId: string) {
    const session = await this.sessions.findById(accountId, sessionId);
    if (!session || session.expiresAt.getTime() <= Date.now()) throw sessionEnded();
    const [user, account] = await Promise.all([this.users.findById(accountId, session.userId), this.accounts.getAccount(accountId)]);
    if (!user) throw sessionEnded();
    return { user, account, csrfToken: session.csrfToken };
  }

  async verifyTokenHash(tokenHash: string, now = Date.now()): Promise<VerifiedSession | null> {
    const session = await this.sessions.findByTokenHash(tokenHash);
    if (!session || session.expiresAt.getTime() <= now) return null;
    const account = await this.accounts.getAccount(session.accountId).catch(() => null);
    if (!account) return null;
    return {
      sessionId: session._id,
      userId: session.userId,
      accountId: session.accountId,
      plan: account.plan,
      csrfToken: session.csrfToken,
      expiresAt: session.expiresAt.toISOString(),
    };
  }

  private async issue(user: UserDoc, account: AccountDoc): Promise<IssuedSession> {
    const token = randomBytes(32).toString('base64url');
    const csrfToken = randomBytes(24).toString('base64url');
    const expiresAt = new Date(Date.now() + SESSION_TTL_MS);
    const id = newId('sess');
    await this.sessions.insert(account._id, { _id: id, userId: user._id, tokenHash: hashToken(token), csrfToken, createdAt: new Date(), expiresAt });
    return { token, expiresAt, user, account, csrfToken };
  }
}

export function accountDto(a: AccountDoc) {
  return { id: a._id, name: a.name, plan: a.plan, rateLimitPerMinute: PLAN_LIMITS[a.plan], createdAt: a.createdAt.toISOString() };
}
