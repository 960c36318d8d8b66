import { DomainError, notFound } from '@dap/errors';

/** The accounts domain's errors, by their codes in @dap/errors; statuses are chosen at the edge. */
export const emailTaken = () => new DomainError('email_taken', 'an account with this e-mail already exists');
export const loginFailed = () => new DomainError('login_failed', 'the e-mail or password is wrong');
export const sessionEnded = () => new DomainError('session_ended', 'the session has ended');
export const accountClosed = () => new DomainError('account_closed', 'the account these credentials belong to no longer exists');
export const sessionRequired = (detail: string) => new DomainError('session_required', detail);
export const currentPasswordWrong = () =>
  new DomainError('current_password_wrong', 'the current password is wrong', { errors: [{ path: 'currentPassword', message: 'is wrong' }] });
export const resetTokenInvalid = () =>
  new DomainError('reset_token_invalid', 'this password reset link is unknown, expired or already used; ask for a new one', {
    errors: [{ path: 'token', message: 'is unknown, expired or already used' }],
  });
export const userNotFound = () => notFound('user_not_found', 'user');
export const accountNotFound = () => notFound('account_not_found', 'account');
export const apiKeyNotFound = () => notFound('api_key_not_found', 'API key');
export const keyNotRollable = () => new DomainError('api_key_not_rollable', 'a revoked or expired key cannot be rolled');
/** A second roll would leave two live successors of one key. */
export const keyAlreadyRolled = (replacedBy: string) =>
  new DomainError('api_key_already_rolled', `this key was already rolled and is being replaced by ${replacedBy}; roll that key instead`);
export const expiryInPast = () => new DomainError('validation_failed', 'expiresAt must be in the future', { errors: [{ path: 'expiresAt', message: 'must be in the future' }] });
