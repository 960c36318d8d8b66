import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ensureDevAccount } from './dev-account.ts';
import { localSecrets, readEnvFile } from './env-file.ts';
import { DEPLOYABLES, startServices, type DeployableName, type Supervised } from './supervisor.ts';

/**
 * The Node half of `npm run cluster` (deploy/local/cluster.sh starts the infrastructure, then this): two
 * replicas of every service and two gateways, each set through the supervisor on its own ports, sharing the
 * databases, the dataset store and the infrastructure. Writes `<base>/ready.env` when all are healthy; SIGTERM
 * stops them (gateways first).
 */
const base = process.argv[2];
if (!base) throw new Error('usage: cluster.ts <cluster base directory>');
const root = join(import.meta.dirname, '..', '..');

const env: Record<string, string> = {
  ...readEnvFile(join(base, 'cluster.env')),
  ...localSecrets(join(base, 'secrets.env')),
  LOG_LEVEL: 'info',
  DATASET_DIR: join(base, 'datasets'),
  ALLOW_PRIVATE_TARGETS: 'true',
};
mkdirSync(env.DATASET_DIR!, { recursive: true });

const portsOf = (first: number): Record<DeployableName, number> => ({
  gateway: first,
  accounts: first + 1,
  sources: first + 2,
  analytics: first + 3,
  models: first + 4,
  webhooks: first + 5,
});
const sets: Supervised[] = [];
let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  await Promise.allSettled(sets.map((s) => s.stop()));
  process.exit(0);
};
process.on('SIGTERM', () => void stop());
process.on('SIGINT', () => void stop());

// The services' replicas first (set a creates the topics, set b finds them), then one gateway per set. The
// gateways reach the services through nginx's per-service balancers (deploy/local/cluster.sh), so either
// gateway reaches whichever replica of a service is alive.
const balanced = {
  ACCOUNTS_URL: 'http://127.0.0.1:31201',
  SOURCES_URL: 'http://127.0.0.1:31202',
  ANALYTICS_URL: 'http://127.0.0.1:31203',
  MODELS_URL: 'http://127.0.0.1:31204',
  WEBHOOKS_URL: 'http://127.0.0.1:31205',
};
const services = DEPLOYABLES.filter((d) => d.name !== 'gateway');
const gatewayOnly = DEPLOYABLES.filter((d) => d.name === 'gateway');
/** Set a's ports start at 31100, set b's at 31110. */
const SETS = [
  ['a', 31100],
  ['b', 31110],
] as const;
const startSet = (first: number, deployables: readonly (typeof DEPLOYABLES)[number][], setEnv: Record<string, string>, logName: string) =>
  startServices({ root, env: setEnv, ports: portsOf(first), logDir: join(base, 'logs', logName), timeoutMs: 180_000, deployables });
try {
  for (const [name, first] of SETS) sets.push(await startSet(first, services, { ...env, INSTANCE_ID: `cluster-${name}` }, name));
  for (const [name, first] of SETS) sets.push(await startSet(first, gatewayOnly, { ...env, ...balanced }, `gateway-${name}`));
  const { apiKey, accountId } = ensureDevAccount(root, env.MONGO_URL ?? '');
  const pids = sets.flatMap((s, i) => Object.entries(s.pids()).map(([n, pid]) => `PID_${n.toUpperCase()}_${'ABAB'[i]}=${pid}`));
  writeFileSync(
    join(base, 'ready.env'),
    [
      `GATEWAY_URL=http://127.0.0.1:31000`,
      `GATEWAY_A_URL=${sets[2]!.urls.gateway}`,
      `GATEWAY_B_URL=${sets[3]!.urls.gateway}`,
      `API_KEY=${apiKey}`,
      `ACCOUNT_ID=${accountId}`,
      ...pids,
      '',
    ].join('\n'),
    { mode: 0o600 },
  );
  process.stdout.write(`cluster services ready (gateways ${sets[2]!.urls.gateway}, ${sets[3]!.urls.gateway})\n`);
} catch (err) {
  // The sets already up would outlive this process, orphaned, on the cluster's ports.
  process.stderr.write(`cluster services failed to start: ${(err as Error).message}\n`);
  await Promise.allSettled(sets.map((s) => s.stop()));
  process.exit(1);
}
