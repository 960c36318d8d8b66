import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import type { z } from 'zod';
import { loadConfig } from '@dap/config';
import { repoRoot } from '@dap/testing';
import { DEPLOYABLES } from '../../deploy/local/supervisor.ts';
import { gatewayConfigShape } from '../../gateway/src/config.ts';
import { accountsConfigShape } from '../../services/accounts/src/config.ts';
import { sourcesConfigShape } from '../../services/sources/src/config.ts';
import { analyticsConfigShape } from '../../services/analytics/src/config.ts';
import { modelsConfigShape } from '../../services/models/src/config.ts';
import { webhooksConfigShape } from '../../services/webhooks/src/config.ts';

/**
 * No Docker engine runs here, so this keeps docker-compose.yml honest offline: every deployable is there,
 * its environment names only variables its config schema knows, and with .env.example's values the
 * service's own config parser accepts it. A renamed env var breaks this test.
 */
const root = repoRoot();
const compose = parse(readFileSync(join(root, 'docker-compose.yml'), 'utf8'), { merge: true }) as {
  services: Record<string, { image?: string; environment?: Record<string, string | number>; ports?: string[]; volumes?: string[]; build?: { args?: Record<string, string> } }>;
};
const example = Object.fromEntries(
  readFileSync(join(root, '.env.example'), 'utf8')
    .split('\n')
    .filter((l) => /^[A-Z_]+=/.test(l))
    .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
);
const shapes: Record<string, z.ZodRawShape> = {
  gateway: gatewayConfigShape,
  accounts: accountsConfigShape,
  sources: sourcesConfigShape,
  analytics: analyticsConfigShape,
  models: modelsConfigShape,
  webhooks: webhooksConfigShape,
};

function interpolate(value: string | number): string {
  return String(value).replace(/\$\{([A-Z_]+)\}/g, (_m, name: string) => {
    if (!(name in example)) throw new Error(`docker-compose.yml uses \${${name}} but .env.example does not define it`);
    return example[name]!;
  });
}

describe('docker-compose.yml', () => {
  it('runs the infrastructure on the real images the design names', () => {
    expect(compose.services.kafka?.image).toMatch(/^apache\/kafka:3\.9/);
    expect(compose.services.mongo?.image).toBe('mongo:7');
    expect(compose.services.redis?.image).toBe('redis:7');
  });

  it.each(DEPLOYABLES.map((d) => d.name))('configures %s so its own config schema accepts it', (name) => {
    const svc = compose.services[name];
    expect(svc).toBeDefined();
    expect(svc!.build?.args?.SERVICE).toBe(name);
    const env = Object.fromEntries(Object.entries(svc!.environment ?? {}).map(([k, v]) => [k, interpolate(v)]));
    const shape = shapes[name]!;
    expect(Object.keys(env).filter((k) => !(k in shape))).toEqual([]);
    expect(() => loadConfig(shape, env)).not.toThrow();
  });

  it('shares one dataset volume between the writer and its readers, and publishes only the gateway', () => {
    for (const name of ['sources', 'analytics']) {
      expect(compose.services[name]!.volumes).toContain('datasets:/data/datasets');
      expect(compose.services[name]!.environment!.DATASET_DIR).toBe('/data/datasets');
    }
    const published = Object.entries(compose.services).filter(([, s]) => s.ports?.length).map(([n]) => n);
    expect(published).toEqual(['gateway']);
    expect(compose.services.gateway!.ports).toEqual(['8080:8080']);
  });
});
