import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { appendFileSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { SCOPES, type Scope } from '@dap/contracts';
import { repoRoot, stackEnv, uniqueSuffix } from '@dap/testing';
import { DEPLOYABLES, freePort, startServices, type DeployableName, type Supervised } from '../deploy/local/supervisor.ts';
import { freshSecrets } from '../deploy/local/env-file.ts';

/**
 * The whole system for the tests under test/ (faults, security, conformance, the browser): every service as
 * its own process (deploy/local/supervisor.ts) on free ports, with a unique Kafka topic prefix and Mongo
 * database prefix, loopback targets allowed, and every process's log in a folder of its own (the secret scan
 * reads them). Accounts and keys come from the operator CLI, as an operator would make them.
 */
export interface StackUrls {
  REDIS_URL: string;
  KAFKA_BROKERS: string;
  MONGO_URL: string;
}

export interface SystemOptions {
  /** Names the log folder and the prefixes (short, lowercase). */
  name: string;
  /** A private stack for fault runs; the shared test stack by default. */
  stack?: StackUrls;
  env?: Record<string, string>;
  /** Only these processes (the others' addresses then lead nowhere unless `env` gives them); all by default. */
  only?: readonly DeployableName[];
}

export interface TestAccount {
  accountId: string;
  keyId: string;
  apiKey: string;
  plan: string;
}

export interface System {
  services: Supervised;
  gw: string;
  logDir: string;
  suffix: string;
  stack: StackUrls;
  /** The process-level secrets given to the services (never to appear in a response or a log). */
  processSecrets: string[];
  createAccount(name: string, plan?: 'starter' | 'professional' | 'enterprise', scopes?: readonly Scope[]): TestAccount;
  createKey(accountId: string, scopes: readonly Scope[], name?: string): { keyId: string; apiKey: string };
  /** The accounts operator CLI (services/accounts/src/cli.ts) on this system's database: its JSON answer. */
  cli(args: string[]): any; // eslint-disable-line @typescript-eslint/no-explicit-any -- each command answers its own shape
  /** Every log line written so far by every process, per file. */
  logs(): Record<string, string>;
  stop(): Promise<void>;
}

const root = repoRoot();

export async function startSystem(opts: SystemOptions): Promise<System> {
  const suffix = uniqueSuffix();
  const stack = opts.stack ?? stackEnv();
  const dbPrefix = `${opts.name}${suffix}_`;
  const logDir = join(root, '.local', 'test', 'logs', `${opts.name}-${suffix}`);
  const ports = {} as Record<DeployableName, number>;
  for (const d of DEPLOYABLES) ports[d.name] = await freePort();
  const metricsPorts = {} as Record<DeployableName, number>;
  for (const d of DEPLOYABLES) metricsPorts[d.name] = await freePort();
  const secrets = freshSecrets();
  const datasetDir = join(root, '.local', 'test', `datasets-${opts.name}-${suffix}`);
  const services = await startServices({
    root,
    ports,
    metricsPorts,
    ...(opts.only ? { deployables: DEPLOYABLES.filter((d) => opts.only!.includes(d.name)) } : {}),
    repickBusyPorts: true,
    logDir,
    mongoDbPrefix: dbPrefix,
    timeoutMs: 120_000,
    env: {
      ...stack,
      ...secrets,
      KAFKA_TOPIC_PREFIX: `${opts.name}${suffix}.`,
      DATASET_DIR: datasetDir,
      ALLOW_PRIVATE_TARGETS: '127.0.0.0/8,::1/128',
      LOG_LEVEL: 'debug',
      AUTH_FAILURES_PER_MINUTE: '100000',
      PUBLIC_REQUESTS_PER_MINUTE: '100000',
      ...opts.env,
    },
  });
  // The CLI retries MongoDB for its start-up period (STARTUP_TIMEOUT_MS); should it still give up on a very
  // busy machine, try again (twice at most).
  const cli = (args: string[]) => {
    for (let attempt = 1; ; attempt++) {
      try {
        return JSON.parse(
          execFileSync(process.execPath, ['--no-warnings', join(root, 'services/accounts/src/cli.ts'), ...args], {
            env: { PATH: process.env.PATH ?? '', MONGO_URL: stack.MONGO_URL, MONGO_DB: `${dbPrefix}accounts` },
            encoding: 'utf8',
            stdio: ['ignore', 'pipe', 'pipe'],
          }),
        );
      } catch (err) {
        if (attempt >= 3 || !/MongoServerSelectionError|MongoNetwork/.test(String((err as { stderr?: unknown }).stderr ?? err))) throw err;
      }
    }
  };
  return {
    services,
    gw: services.urls.gateway,
    logDir,
    suffix,
    stack,
    processSecrets: Object.values(secrets),
    cli,
    createAccount(name, plan = 'enterprise', scopes = SCOPES) {
      const out = cli(['create-account', '--name', name, '--plan', plan, '--scopes', scopes.join(',')]);
      return { accountId: out.accountId, keyId: out.keyId, apiKey: out.apiKey, plan: out.plan };
    },
    createKey(accountId, scopes, name = 'test') {
      const out = cli(['create-key', '--account', accountId, '--name', name, '--scopes', scopes.join(',')]);
      return { keyId: out.keyId, apiKey: out.apiKey };
    },
    logs() {
      const out: Record<string, string> = {};
      for (const f of readdirSync(logDir)) out[f] = readFileSync(join(logDir, f), 'utf8');
      return out;
    },
    stop: async () => {
      await services.stop();
      rmSync(datasetDir, { recursive: true, force: true });
    },
  };
}

export const sha256Hex = (s: string) => createHash('sha256').update(s, 'utf8').digest('hex');

export interface Recorded {
  method: string;
  path: string;
  status: number;
  headers: Record<string, string>;
  text: string;
  ms: number;
  /** Set when no answer came: a timeout (a hang) or a refused connection. */
  error?: string;
}

export interface CallOptions {
  body?: unknown;
  /** Sent as is (a string or bytes), with the content type given in headers. */
  raw?: string | Uint8Array;
  headers?: Record<string, string>;
  timeoutMs?: number;
}

/**
 * fetch with a per-request timeout that records every answer (status, headers, body) so a test can count
 * 5xx and search every response for secrets afterwards.
 */
export class Recorder {
  readonly responses: Recorded[] = [];
  /** Keep bodies for the secret scan; a load generator may turn it off to save memory. */
  keepBodies = true;

  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- bodies are asserted field by field
  async call(base: string, method: string, path: string, opts: CallOptions = {}): Promise<Recorded & { json: any }> {
    const headers: Record<string, string> = { ...opts.headers };
    let body: string | Uint8Array | undefined = opts.raw;
    if (opts.body !== undefined) {
      body = JSON.stringify(opts.body);
      headers['content-type'] ??= 'application/json';
    }
    const started = Date.now();
    const rec: Recorded = { method, path, status: 0, headers: {}, text: '', ms: 0 };
    try {
      const res = await fetch(`${base}${path}`, { method, headers, body, signal: AbortSignal.timeout(opts.timeoutMs ?? 15_000), redirect: 'manual' });
      rec.status = res.status;
      res.headers.forEach((v, k) => (rec.headers[k] = v));
      rec.text = await res.text();
    } catch (err) {
      const e = err as Error & { cause?: { code?: string } };
      rec.error = e.name === 'TimeoutError' ? 'timeout' : (e.cause?.code ?? e.message);
    }
    rec.ms = Date.now() - started;
    this.responses.push(this.keepBodies ? rec : { ...rec, text: rec.text.slice(0, 2000) });
    let json: unknown;
    try {
      json = rec.text ? JSON.parse(rec.text) : undefined;
    } catch {
      json = undefined;
    }
    return Object.assign({}, rec, { json }) as Recorded & { json: any }; // eslint-disable-line @typescript-eslint/no-explicit-any -- see above
  }
}

/** Where each secret value was found, other than the responses allowed to carry it. */
export function findLeaks(
  secrets: Array<{ what: string; value: string; allowedIn?: (r: Recorded) => boolean }>,
  responses: readonly Recorded[],
  logs: Record<string, string>,
): string[] {
  const leaks: string[] = [];
  for (const s of secrets) {
    if (s.value.length < 8) throw new Error(`secret ${s.what} is too short to search for`);
    for (const r of responses) {
      if (s.allowedIn?.(r)) continue;
      const headerText = Object.entries(r.headers)
        .map(([k, v]) => `${k}: ${v}`)
        .join('\n');
      if (r.text.includes(s.value) || headerText.includes(s.value)) leaks.push(`${s.what} in the response to ${r.method} ${r.path} (${r.status})`);
    }
    for (const [file, text] of Object.entries(logs)) {
      const at = text.indexOf(s.value);
      if (at >= 0) leaks.push(`${s.what} in ${file}: ${text.slice(Math.max(0, text.lastIndexOf('\n', at) + 1), at + 40).slice(0, 300)}`);
    }
  }
  return leaks;
}

export const bearer = (apiKey: string) => ({ authorization: `Bearer ${apiKey}` });
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Appends one line of figures to the fault run's report (deploy/local/faults.sh prints them as a table). */
export function reportFigures(figures: Record<string, string | number>): void {
  const file = process.env.FAULTS_REPORT;
  if (file) appendFileSync(file, `${JSON.stringify(figures)}\n`);
}
