import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { chooseTestStack, dockerEndpoint, dockerReachable, PINNED_IMAGES, TestStackError } from './test-stack.ts';

describe('chooseTestStack', () => {
  it.each([
    [undefined, true, 'containers'],
    [undefined, false, 'local'],
    ['', true, 'containers'],
    ['auto', true, 'containers'],
    ['auto', false, 'local'],
    ['local', true, 'local'],
    ['local', false, 'local'],
    ['containers', true, 'containers'],
  ])('TEST_STACK=%j with Docker reachable %s runs on %s', (setting, reachable, mode) => {
    expect(chooseTestStack(setting, reachable)).toBe(mode);
  });

  it('refuses containers without a Docker engine, and unknown values, saying what to do', () => {
    expect(() => chooseTestStack('containers', false)).toThrow(TestStackError);
    expect(() => chooseTestStack('containers', false)).toThrow(/no Docker engine answers.*TEST_STACK=local/);
    expect(() => chooseTestStack('docker', true)).toThrow('TEST_STACK must be auto, local or containers (got "docker")');
  });
});

describe('dockerEndpoint', () => {
  it('reads DOCKER_HOST as a unix socket or a tcp address', () => {
    expect(dockerEndpoint({ DOCKER_HOST: 'unix:///run/user/1000/docker.sock' })).toEqual({ socketPath: '/run/user/1000/docker.sock' });
    expect(dockerEndpoint({ DOCKER_HOST: 'tcp://10.0.0.5:2375' })).toEqual({ host: '10.0.0.5', port: 2375 });
    expect(dockerEndpoint({ DOCKER_HOST: 'ssh://user@host' })).toBeNull();
  });
});

describe('dockerReachable', () => {
  let dir: string;
  let server: Server | null = null;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'dap-docker-'))));
  afterEach(async () => {
    if (server) await new Promise((r) => server!.close(r));
    server = null;
    rmSync(dir, { recursive: true, force: true });
  });

  async function engine(status: number, body: string): Promise<string> {
    const socketPath = join(dir, 'docker.sock');
    server = createServer((req, res) => {
      res.statusCode = req.url === '/_ping' ? status : 404;
      res.end(req.url === '/_ping' ? body : '');
    });
    await new Promise<void>((resolve) => server!.listen(socketPath, resolve));
    return `unix://${socketPath}`;
  }

  it('is true when the engine answers its ping', async () => {
    expect(await dockerReachable({ DOCKER_HOST: await engine(200, 'OK') })).toBe(true);
  });

  it('is false when the ping fails, nothing listens, or the socket does not exist', async () => {
    expect(await dockerReachable({ DOCKER_HOST: await engine(500, 'engine error') })).toBe(false);
    expect(await dockerReachable({ DOCKER_HOST: `unix://${join(dir, 'absent.sock')}` })).toBe(false);
    expect(await dockerReachable({ DOCKER_HOST: 'tcp://127.0.0.1:1' })).toBe(false);
  });
});

describe('pinned versions', () => {
  const root = join(import.meta.dirname, '..', '..');
  const compose = parse(readFileSync(join(root, 'docker-compose.yml'), 'utf8')) as { services: Record<string, { image?: string }> };

  it('docker-compose.yml runs the same engines as the containerised test stack', () => {
    expect(compose.services.kafka?.image).toBe(PINNED_IMAGES.kafka);
    expect(compose.services.mongo?.image).toBe(PINNED_IMAGES.mongodb);
    expect(compose.services.redis?.image).toBe(PINNED_IMAGES.redis);
  });

  it('the local stack runs the same Kafka release as the images', () => {
    const pom = readFileSync(join(root, 'deploy/local/jvm/kafka/pom.xml'), 'utf8');
    expect(/<kafka\.version>([^<]+)<\/kafka\.version>/.exec(pom)?.[1]).toBe(PINNED_IMAGES.kafka.split(':')[1]);
  });
});
