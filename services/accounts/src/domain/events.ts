import { makeEvent, type Plan } from '@dap/contracts';

/** Each change of an account or its keys and the event announcing it are stored in one write. */
export const planChanged = (accountId: string, plan: Plan) => makeEvent('account.plan_changed', { accountId, subject: accountId, data: { plan } });

export const apiKeyCreated = (accountId: string, keyId: string) => makeEvent('apikey.created', { accountId, subject: keyId, data: { keyId } });

/** Gateways cache verified keys; this evicts the entry so a changed expiry (a roll's grace period) applies at once. */
export const apiKeyUpdated = (accountId: string, keyId: string) => makeEvent('apikey.updated', { accountId, subject: keyId, data: { keyId } });

export const apiKeyRevoked = (accountId: string, keyId: string) => makeEvent('apikey.revoked', { accountId, subject: keyId, data: { keyId } });
