import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

/**
 * Loads a service owner's bench module (e.g. deploy/bench/services/webhooks/delivery.bench.ts) when it exists, so
 * each service's figure is measured by the code that knows the service best; null when it is not there yet.
 */
export async function ownerBench<T>(root: string, file: string, exportName: string): Promise<T | null> {
  const path = join(root, file);
  if (!existsSync(path)) return null;
  const mod = (await import(pathToFileURL(path).href)) as Record<string, unknown>;
  const fn = mod[exportName];
  if (typeof fn !== 'function') throw new Error(`${file} does not export ${exportName}()`);
  return fn as T;
}
