import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ensureDevAccount } from './dev-account.ts';
import { localSecrets, readEnvFile } from './env-file.ts';
import { startServices, type DeployableName } from './supervisor.ts';

/** `npm start`: runs every service against the dev stack, mints a development key and prints the URLs. */
const root = process.cwd();
const local = join(root, '.local');
const dev = join(local, 'dev');
mkdirSync(dev, { recursive: true });

// Secrets for the local stack are generated once and kept in the git-ignored .local folder.
const secrets = localSecrets(join(dev, 'secrets.env'));

const stack = readEnvFile(join(dev, 'stack.env'));
const ports: Record<DeployableName, number> = { gateway: 8080, accounts: 8091, sources: 8092, analytics: 8093, models: 8094, webhooks: 8095 };
const env: Record<string, string> = {
  ...stack,
  ...secrets,
  LOG_LEVEL: 'info',
  DATASET_DIR: join(dev, 'datasets'),
  // The local stack lets webhooks and sources reach receivers and databases on this machine (loopback);
  // production refuses private targets. The stack's own ports stay refused (the supervisor lists them).
  ALLOW_PRIVATE_TARGETS: '127.0.0.0/8,::1/128',
};

// Prometheus metrics, each process on its own port (the API ports never serve them).
const metricsPorts: Record<DeployableName, number> = { gateway: 9464, accounts: 9465, sources: 9466, analytics: 9467, models: 9468, webhooks: 9469 };
const services = await startServices({ root, env, ports, metricsPorts, logDir: join(dev, 'logs') });
const { apiKey, accountId } = ensureDevAccount(root, stack.MONGO_URL ?? '');
const gatewayUrl = services.urls.gateway;
const dashboardUrl = `${gatewayUrl}/`;
writeFileSync(join(local, 'dev.env'), `GATEWAY_URL=${gatewayUrl}\nDASHBOARD_URL=${dashboardUrl}\nAPI_KEY=${apiKey}\nACCOUNT_ID=${accountId}\n`, { mode: 0o600 });

process.stdout.write(`
  Data Analytics & Model Prediction API is running.

  GATEWAY_URL=${gatewayUrl}
  DASHBOARD_URL=${dashboardUrl}
  API_KEY=${apiKey}
  API docs: ${gatewayUrl}/docs
  Metrics: ${services.metricsUrls.gateway}/metrics (ports ${Object.values(metricsPorts).join(', ')})

  Try: curl -H "Authorization: Bearer $API_KEY" ${gatewayUrl}/v1/sources
  (also written to .local/dev.env; logs in .local/dev/logs/; Ctrl-C stops the services,
  bash deploy/local/stack.sh down dev the stack)
`);

let stopping = false;
const shutdown = async () => {
  if (stopping) return;
  stopping = true;
  process.stdout.write('\nstopping services...\n');
  await services.stop();
  process.exit(0);
};
process.on('SIGINT', shutdown);
process.on('SIGTERM', shutdown);
setInterval(() => {}, 1 << 30);
