import { loadConfig, serviceConfigShape } from '@dap/config';

export const accountsConfigShape = serviceConfigShape('accounts');
export type AccountsConfig = ReturnType<typeof loadAccountsConfig>;

export function loadAccountsConfig(env: Record<string, string | undefined> = process.env) {
  return loadConfig(accountsConfigShape, env);
}
