import type { ApiKeyDto } from '@dap/contracts';
import type { ApiKeyDoc } from '../persistence/api-key.repository.ts';
import type { UserDoc } from '../persistence/user.repository.ts';
import type { AccountDoc } from '../persistence/account.repository.ts';
import { accountDto } from '../domain/identity.service.ts';

export function apiKeyDto(k: ApiKeyDoc): ApiKeyDto {
  return {
    id: k._id,
    name: k.name,
    hint: k.hint,
    scopes: k.scopes,
    createdAt: k.createdAt.toISOString(),
    lastUsedAt: k.lastUsedAt?.toISOString() ?? null,
    expiresAt: k.expiresAt?.toISOString() ?? null,
    revokedAt: k.revokedAt?.toISOString() ?? null,
    replacedBy: k.replacedBy ?? null,
  };
}

export function sessionDto(s: { user: UserDoc; account: AccountDoc; csrfToken: string }) {
  return { user: { id: s.user._id, email: s.user.email }, account: accountDto(s.account), csrfToken: s.csrfToken };
}
