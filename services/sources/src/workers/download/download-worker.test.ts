import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { createLogger } from '@dap/logger';
import { ConnectorCheckError } from '../../domain/connectors/connector.ts';
import { COLLECT_EVERY_BYTES, downloadToFile, type DownloadJob } from '../../domain/connectors/url-download.ts';
import { DownloadWorker } from './download-worker.ts';

let server: Server;
let port = 0;
let dir: string;
let worker: DownloadWorker;
const hosts: string[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    hosts.push(req.headers.host ?? '');
    if (req.url === '/x.csv') return void res.writeHead(200, { 'content-type': 'text/csv' }).end('a,b\n1,2\n');
    if (req.url === '/gz') return void res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-encoding': 'gzip' }).end(gzipSync('{"a":1}\n'));
    if (req.url === '/big.csv') return void res.writeHead(200, { 'content-type': 'text/csv' }).end(`a\n${'1\n'.repeat(10_000)}`);
    if (req.url === '/ten-mib.csv') return void res.writeHead(200, { 'content-type': 'text/csv' }).end(`a\n${'1\n'.repeat(5 * 1024 * 1024 - 1)}`);
    if (req.url === '/stall.csv') return void res.writeHead(200, { 'content-type': 'text/csv' }).write('a\n1\n');
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  port = (server.address() as AddressInfo).port;
  dir = await mkdtemp(join(tmpdir(), 'dap-download-test-'));
  worker = new DownloadWorker({ logger: createLogger({ name: 'test', level: 'silent' }) });
});

afterAll(async () => {
  await worker.stop();
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
  await rm(dir, { recursive: true, force: true });
});

let n = 0;
/** A job for a name no resolver knows, pinned to the loopback server: only the pinned address can work. */
const job = (path: string, extra: Partial<DownloadJob> = {}): DownloadJob => ({
  spec: { url: `http://files.example.test:${port}${path}` },
  dial: { pinned: { address: '127.0.0.1', family: 4 } },
  file: join(dir, `f${++n}`),
  maxBytes: 1024 * 1024,
  connectTimeoutMs: 2_000,
  idleTimeoutMs: 2_000,
  ...extra,
});

async function failure(p: Promise<unknown>): Promise<ConnectorCheckError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ConnectorCheckError);
  return err as ConnectorCheckError;
}

describe('the download worker', () => {
  it('downloads in its thread to the file, dialling the pinned address with the URL’s host name', async () => {
    const j = job('/x.csv');
    const got = await worker.run(j, new AbortController().signal);
    expect(got).toEqual({ format: 'csv', bytes: 8, head: Buffer.from('a,b\n1,2\n') });
    expect(await readFile(j.file, 'utf8')).toBe('a,b\n1,2\n');
    expect(hosts.at(-1)).toBe(`files.example.test:${port}`);
    const gz = job('/gz');
    expect(await worker.run(gz, new AbortController().signal)).toEqual({ format: null, bytes: 8, head: Buffer.from('{"a":1}\n') });
  });

  it('brings failures back as the connector’s errors', async () => {
    const missing = await failure(worker.run(job('/missing'), new AbortController().signal));
    expect([missing.field, missing.message]).toEqual(['url', 'the server answered HTTP 404']);
    expect((await failure(worker.run(job('/big.csv', { maxBytes: 1_000 }), new AbortController().signal))).message).toBe('the data is larger than the limit of 1000 bytes');
    expect((await failure(worker.run(job('/stall.csv', { idleTimeoutMs: 200 }), new AbortController().signal))).message).toMatch(/sent nothing for/);
  });

  it('stops a download when its signal aborts, and keeps serving the next ones', async () => {
    const controller = new AbortController();
    const running = worker.run(job('/stall.csv'), controller.signal);
    setTimeout(() => controller.abort(new Error('deadline')), 100);
    await expect(running).rejects.toThrow();
    expect((await worker.run(job('/x.csv'), new AbortController().signal)).bytes).toBe(8);
  });

  it("collects its garbage as a large body streams (V8's gc, exposed in the worker), and the body arrives whole", async () => {
    const got = await worker.run(job('/ten-mib.csv', { maxBytes: 64 * 1024 * 1024 }), new AbortController().signal);
    expect(got.bytes).toBe(10 * 1024 * 1024);
  });

  it('calls the collect hook once every COLLECT_EVERY_BYTES of body', async () => {
    let calls = 0;
    const got = await downloadToFile(job('/ten-mib.csv', { maxBytes: 64 * 1024 * 1024 }), new AbortController().signal, () => calls++);
    expect(got.bytes).toBe(10 * 1024 * 1024);
    expect(calls).toBe(Math.floor(got.bytes / COLLECT_EVERY_BYTES));
  });

  it('refuses work once stopped', async () => {
    const stopped = new DownloadWorker({ logger: createLogger({ name: 'test', level: 'silent' }) });
    await stopped.stop();
    await expect(stopped.run(job('/x.csv'), new AbortController().signal)).rejects.toThrow(/stopped/);
  });
});
