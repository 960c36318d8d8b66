import { boolFromEnv, loadConfig, serviceConfigShape } from '@dap/config';

export const accountsConfigShape = {
  ...serviceConfigShape('accounts'),
  /** Always mark session cookies Secure (otherwise only when the gateway saw HTTPS). */
  COOKIE_SECURE: boolFromEnv.default(false),
};
export type AccountsConfig = ReturnType<typeof loadAccountsConfig>;

export function loadAccountsConfig(env: Record<string, string | undefined> = process.env) {
  return loadConfig(accountsConfigShape, env);
}
