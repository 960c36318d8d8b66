import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { repoRoot } from '@dap/testing';
import { ExitedDuringStartup, freePort, nodeFlagsOf, waitHealthy } from '../../../deploy/local/supervisor.ts';

export interface ChildWebhooks {
  url: string;
  port: number;
  pid: number;
  /** Sends a signal and resolves once the process has exited. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** The last lines it wrote (stdout and stderr), for failure messages. */
  output(): string;
}

const OUTPUT_CAP = 64 * 1024;

/**
 * Runs the webhooks service as its own process, as deploy/local/supervisor.ts does: Node 24 with type
 * stripping on src/main.ts and the services' node flags, configured only by env. Resolves once /healthz answers.
 */
export async function spawnWebhooks(env: Record<string, string>, opts: { port?: number; timeoutMs?: number; entry?: string } = {}): Promise<ChildWebhooks> {
  const root = repoRoot();
  const port = opts.port ?? (await freePort());
  const child: ChildProcess = spawn(process.execPath, ['--no-warnings', ...nodeFlagsOf('webhooks'), opts.entry ?? join(root, 'services/webhooks/src/main.ts')], {
    cwd: root,
    env: { PATH: process.env.PATH ?? '', ...env, HOST: '127.0.0.1', PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const keep = (chunk: Buffer) => {
    out = (out + chunk.toString('utf8')).slice(-OUTPUT_CAP);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitHealthy(url, child, 'webhooks', opts.timeoutMs ?? 30_000, 'its output follows');
  } catch (err) {
    if (!(err instanceof ExitedDuringStartup)) child.kill('SIGKILL');
    throw new Error(`${(err as Error).message}:\n${out}`, { cause: err });
  }
  return {
    url,
    port,
    pid: child.pid!,
    kill: async (signal = 'SIGTERM') => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      await exited;
    },
    output: () => out,
  };
}
