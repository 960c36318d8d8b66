import { z } from 'zod';
import { isoDate, listOf, namedResourceSchema } from './common.ts';
import { planSchema, scopeSchema } from '../plans.ts';

export const SESSION_COOKIE = 'dap_session';
export const CSRF_HEADER = 'x-csrf-token';
export const MAX_KEY_GRACE_SECONDS = 7 * 24 * 3600;
export const DEFAULT_KEY_GRACE_SECONDS = 24 * 3600;

const email = z.string().trim().toLowerCase().email().max(254);
/** NIST 800-63B: length over composition rules; the upper bound keeps hashing cheap to refuse. */
const password = z.string().min(10, 'at least 10 characters').max(200);

export const signupBody = z
  .strictObject({ email, password, accountName: z.string().trim().min(1).max(200) })
  .meta({ id: 'Signup', examples: [{ email: 'ada@example.com', password: 'correct horse battery', accountName: 'Analytical Engines Ltd' }] });
export const loginBody = z.strictObject({ email, password: z.string().min(1).max(200) }).meta({ id: 'Login' });
/** The new password follows sign-up's rules. */
export const changePasswordBody = z.strictObject({ currentPassword: z.string().min(1).max(200), newPassword: password }).meta({ id: 'ChangePassword' });
export const passwordResetBody = z
  .strictObject({
    token: z.string().min(1).max(200).describe('the token from the reset link an operator issued (`reset-password-link` in the accounts CLI)'),
    newPassword: password,
  })
  .meta({ id: 'PasswordReset' });

export const userSchema = z.object({ id: z.string(), email: z.string() });
export const accountSchema = z.object({ id: z.string(), name: z.string(), plan: planSchema, rateLimitPerMinute: z.number().int(), createdAt: isoDate }).meta({ id: 'Account' });
export type AccountDto = z.infer<typeof accountSchema>;

export const sessionSchema = z
  .object({ user: userSchema, account: accountSchema, csrfToken: z.string().describe(`send it back in the ${CSRF_HEADER} header on every non-GET request`) })
  .meta({ id: 'Session' });
export type SessionDto = z.infer<typeof sessionSchema>;

export const apiKeySchema = namedResourceSchema
  .extend({
    hint: z.string().describe('the key prefix and its last four characters'),
    scopes: z.array(scopeSchema),
    createdAt: isoDate,
    lastUsedAt: isoDate.nullable(),
    expiresAt: isoDate.nullable(),
    revokedAt: isoDate.nullable(),
    replacedBy: z
      .string()
      .nullable()
      .describe('the key that replaced this one when it was rolled (this one then stops working at expiresAt, the end of its grace period); null if never rolled'),
  })
  .meta({ id: 'ApiKey' });
export type ApiKeyDto = z.infer<typeof apiKeySchema>;
export const apiKeyCreatedSchema = apiKeySchema.extend({ secret: z.string().describe('the API key itself, shown only in this response') }).meta({ id: 'ApiKeyCreated' });
export const apiKeyListSchema = listOf(apiKeySchema).meta({ id: 'ApiKeyList' });

export const createKeyBody = z
  .strictObject({
    name: z.string().trim().min(1).max(100),
    scopes: z.array(scopeSchema).min(1).max(8).optional(),
    expiresAt: z.iso.datetime({ offset: true }).optional().describe('ISO-8601 date-time in the future'),
  })
  .meta({ id: 'CreateApiKey', examples: [{ name: 'reporting job', scopes: ['analytics:read', 'analytics:write'] }] });
export const rollKeyBody = z
  .strictObject({
    gracePeriodSeconds: z.number().int().min(0).max(MAX_KEY_GRACE_SECONDS).default(DEFAULT_KEY_GRACE_SECONDS).describe('how long the old key keeps working'),
  })
  .meta({ id: 'RollApiKey' });

export const usageSchema = z
  .object({
    plan: planSchema,
    limit: z.number().int().describe('requests allowed per sliding 60-s window'),
    windowSeconds: z.number().int(),
    used: z.number().int().describe('requests counted in the current window'),
    remaining: z.number().int(),
    resetSeconds: z.number().int().describe('seconds until the oldest counted request leaves the window'),
  })
  .meta({ id: 'Usage' });
export type UsageDto = z.infer<typeof usageSchema>;
