import type { OutboxPlan } from '@dap/mongo';
import { ACCOUNTS_COLLECTION } from '../persistence/account.repository.ts';
import { API_KEYS_COLLECTION } from '../persistence/api-key.repository.ts';

/**
 * What the accounts service publishes: its accounts' and API keys' events (plan changes, keys created, updated
 * and revoked), from their documents' outboxes. The operator CLI writes such events from another process, which
 * only the relay's sweep finds, so it sweeps often: a revocation reaches every gateway within a moment.
 */
export const ACCOUNTS_OUTBOX: OutboxPlan = { collections: [ACCOUNTS_COLLECTION, API_KEYS_COLLECTION], intervalMs: 250 };
