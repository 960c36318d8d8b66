import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { INTERNAL_CONTEXT_HEADER, INTERNAL_SIGNATURE_HEADER, newId, SCOPES, signCallerContext, type Plan } from '@dap/contracts';
import { DEPLOYABLES, freePort, nodeFlagsOf, platformEndpoints, type DeployableName } from '../../local/supervisor.ts';
import { freshSecrets } from '../../local/env-file.ts';
import { connectMongo } from '@dap/mongo';
import { startNodeProcess, type BenchProcess, type Pinning } from './procs.ts';

export interface SystemOptions {
  root: string;
  stack: { REDIS_URL: string; KAFKA_BROKERS: string; MONGO_URL: string };
  runDir: string;
  suffix: string;
  pinning: Pinning;
  /** Plan limits of the bench gateways (PLAN_LIMITS_OVERRIDE). */
  planLimits: string;
  rateLimitWindowMs: number;
  logLevel: string;
}

export interface BenchSystem {
  urls: Record<DeployableName | 'gateway2', string>;
  env: Record<string, string>;
  internalSecret: string;
  dbPrefix: string;
  topicPrefix: string;
  datasetDir: string;
  processes: BenchProcess[];
  /** Headers a service accepts as the gateway's signed caller context (fresh: it is valid for 5 minutes). */
  signed(accountId: string, plan?: Plan): Record<string, string>;
  /** Creates an account and a key with every scope through the operator CLI. */
  createAccount(plan: Plan, name: string): { accountId: string; apiKey: string };
  /** Starts one more instance of a deployable (e.g. a profiled gateway) on a free port. */
  startExtra(name: DeployableName, as: string, opts?: { cpuProfDir?: string; pinned?: boolean; env?: Record<string, string> }): Promise<BenchProcess>;
  stop(): Promise<void>;
}

/** Drops the run's databases (the growth scenario alone seeds 100,000 accounts): the stack outlives the run. */
async function dropDatabases(url: string, prefix: string): Promise<void> {
  const mongo = await connectMongo(url, 'admin');
  try {
    const { databases } = await mongo.db.admin().listDatabases({ nameOnly: true });
    for (const d of databases) if (d.name.startsWith(prefix)) await mongo.client.db(d.name).dropDatabase();
  } finally {
    await mongo.close();
  }
}

/** Deployables that are "under test" in the latency scenarios and get the servers' CPU when pinning. */
const PINNED: ReadonlySet<string> = new Set(['gateway', 'gateway2', 'models']);

/**
 * Every service as its own Node 24 process (as in production and in deploy/local/supervisor.ts), on free
 * ports, with its own databases and topics, plus a second gateway instance for the limiter scenario.
 */
export async function startSystem(o: SystemOptions): Promise<BenchSystem> {
  const secrets = freshSecrets();
  const internalSecret = secrets.INTERNAL_SECRET;
  const dbPrefix = `bench${o.suffix}_`;
  const topicPrefix = `bench${o.suffix}.`;
  const datasetDir = join(o.runDir, 'datasets');
  const ports = {} as Record<DeployableName | 'gateway2', number>;
  for (const d of DEPLOYABLES) ports[d.name] = await freePort();
  ports.gateway2 = await freePort();
  const urls = Object.fromEntries(Object.entries(ports).map(([n, p]) => [n, `http://127.0.0.1:${p}`])) as BenchSystem['urls'];
  const env: Record<string, string> = {
    ...o.stack,
    KAFKA_TOPIC_PREFIX: topicPrefix,
    ...secrets,
    DATASET_DIR: datasetDir,
    ALLOW_PRIVATE_TARGETS: '127.0.0.0/8,::1/128',
    LOG_LEVEL: o.logLevel,
    // gateway
    PLAN_LIMITS_OVERRIDE: o.planLimits,
    RATE_LIMIT_WINDOW_MS: String(o.rateLimitWindowMs),
    AUTH_FAILURES_PER_MINUTE: '1000000',
    PUBLIC_REQUESTS_PER_MINUTE: '1000000',
    // analytics: answer big group-bys synchronously (201) instead of 202 + polling, up to its maximum budget
    QUERY_BUDGET_MS: '60000',
    QUERY_TIMEOUT_MS: '600000',
  };
  for (const d of DEPLOYABLES) env[d.urlEnv] = urls[d.name];
  env.PLATFORM_ENDPOINTS = platformEndpoints(env, Object.values(ports));
  const logDir = join(o.runDir, 'logs');
  const processes: BenchProcess[] = [];
  const launch = async (name: DeployableName, as: string, port: number, extra: { cpuProfDir?: string; pinned?: boolean; env?: Record<string, string> } = {}) => {
    const d = DEPLOYABLES.find((x) => x.name === name)!;
    const p = await startNodeProcess({
      root: o.root,
      name: as,
      entry: d.entry,
      nodeFlags: nodeFlagsOf(name),
      port,
      env: { ...env, MONGO_DB: `${dbPrefix}${name}`, ...extra.env },
      logDir,
      cpus: (extra.pinned ?? PINNED.has(as)) ? o.pinning.servers : null,
      ...(extra.cpuProfDir ? { cpuProfDir: extra.cpuProfDir } : {}),
    });
    processes.push(p);
    return p;
  };

  const stop = async () => {
    const gateways = processes.filter((p) => p.name.startsWith('gateway'));
    await Promise.all(gateways.map((p) => p.stop()));
    await Promise.all(processes.filter((p) => !gateways.includes(p)).map((p) => p.stop()));
    await dropDatabases(o.stack.MONGO_URL, dbPrefix);
  };
  try {
    // allSettled: when one fails, the others have finished starting (and are in `processes`) before stop().
    const started = await Promise.allSettled(DEPLOYABLES.filter((d) => d.name !== 'gateway').map((d) => launch(d.name, d.name, ports[d.name])));
    const failed = started.find((s): s is PromiseRejectedResult => s.status === 'rejected');
    if (failed) throw failed.reason;
    await launch('gateway', 'gateway', ports.gateway);
    await launch('gateway', 'gateway2', ports.gateway2);
  } catch (err) {
    await stop();
    throw new Error(`${(err as Error).message} (logs in ${logDir})`, { cause: err });
  }

  return {
    urls,
    env,
    internalSecret,
    dbPrefix,
    topicPrefix,
    datasetDir,
    processes,
    signed(accountId, plan = 'enterprise') {
      const { context, signature } = signCallerContext(internalSecret, { accountId, plan, scopes: [...SCOPES], requestId: newId('req'), issuedAt: Date.now() });
      return { [INTERNAL_CONTEXT_HEADER]: context, [INTERNAL_SIGNATURE_HEADER]: signature };
    },
    createAccount(plan, name) {
      const out = execFileSync(process.execPath, ['--no-warnings', join(o.root, 'services/accounts/src/cli.ts'), 'create-account', '--name', name, '--plan', plan], {
        env: { PATH: process.env.PATH ?? '', MONGO_URL: o.stack.MONGO_URL, MONGO_DB: `${dbPrefix}accounts` },
        encoding: 'utf8',
      });
      const parsed = JSON.parse(out) as { accountId: string; apiKey: string };
      return { accountId: parsed.accountId, apiKey: parsed.apiKey };
    },
    async startExtra(name, as, extra = {}) {
      return launch(name, as, await freePort(), extra);
    },
    stop,
  };
}
