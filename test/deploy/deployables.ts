import type { z } from 'zod';
import { DEPLOYABLES } from '../../deploy/local/supervisor.ts';
import { gatewayConfigShape } from '../../gateway/src/config.ts';
import { accountsConfigShape } from '../../services/accounts/src/config.ts';
import { sourcesConfigShape } from '../../services/sources/src/config.ts';
import { analyticsConfigShape } from '../../services/analytics/src/config.ts';
import { modelsConfigShape } from '../../services/models/src/config.ts';
import { webhooksConfigShape } from '../../services/webhooks/src/config.ts';

/** What the deployment tests check every manifest against: each process's own config schema. */
export const SHAPES: Record<string, z.ZodRawShape> = {
  gateway: gatewayConfigShape,
  accounts: accountsConfigShape,
  sources: sourcesConfigShape,
  analytics: analyticsConfigShape,
  models: modelsConfigShape,
  webhooks: webhooksConfigShape,
};

/**
 * Variables the manifests already set for a service whose schema is about to read them (models is
 * gaining DATASET_DIR to train from the dataset store). Unknown variables are ignored at run time, so this
 * is safe; drop an entry once the schema has the variable.
 */
export const PENDING_ENV: Record<string, string[]> = {};

export const NAMES = DEPLOYABLES.map((d) => d.name);

export const entryOf = (name: string) => DEPLOYABLES.find((d) => d.name === name)!.entry;
/** The workspace directory of a deployable: `gateway` or `services/<name>`. */
export const dirOf = (name: string) => entryOf(name).replace(/\/src\/main\.ts$/, '');

/** Env names a manifest may set for a deployable. */
export function knownEnv(name: string): Set<string> {
  return new Set([...Object.keys(SHAPES[name]!), ...(PENDING_ENV[name] ?? [])]);
}

/** The deployables whose processes read the dataset store. */
export const DATASET_USERS = NAMES.filter((n) => knownEnv(n).has('DATASET_DIR'));
export const DATASET_WRITER = 'sources';
