import { statSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freshSecrets, localSecrets, parseEnv, readEnvFile } from './env-file.ts';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'env-file-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

it('reads KEY=value lines, keeping "=" inside values and skipping comments, blanks and other lines', () => {
  expect(parseEnv('# a comment\nMONGO_URL=mongodb://h:1/?a=b\n\nnot a line\n lead=x\nlower_ok=1\n')).toEqual({ MONGO_URL: 'mongodb://h:1/?a=b', lower_ok: '1' });
  expect(readEnvFile(join(dir, 'missing.env'))).toEqual({});
});

it('generates the local secrets once, owner-only, keeps them, and generates them afresh when one is missing', () => {
  const file = join(dir, 'secrets.env');
  const first = localSecrets(file);
  expect(first.INTERNAL_SECRET).toMatch(/^[0-9a-f]{64}$/);
  expect(Buffer.from(first.WEBHOOK_SECRET_KEY, 'base64')).toHaveLength(32);
  expect(Buffer.from(first.SOURCE_CREDENTIALS_KEY, 'base64')).toHaveLength(32);
  expect(first.WEBHOOK_SECRET_KEY).not.toBe(first.SOURCE_CREDENTIALS_KEY);
  expect(statSync(file).mode & 0o777).toBe(0o600);
  expect(localSecrets(file)).toEqual(first);
  expect(readEnvFile(file)).toEqual(first);

  writeFileSync(file, `INTERNAL_SECRET=${first.INTERNAL_SECRET}\n`);
  const fresh = localSecrets(file);
  expect(fresh.INTERNAL_SECRET).not.toBe(first.INTERNAL_SECRET);
  expect(readEnvFile(file)).toEqual(fresh);
});

it('makes new secrets on every call', () => {
  const [a, b] = [freshSecrets(), freshSecrets()];
  expect(Object.keys(a).sort()).toEqual(['INTERNAL_SECRET', 'SOURCE_CREDENTIALS_KEY', 'WEBHOOK_SECRET_KEY']);
  expect(a.INTERNAL_SECRET).toMatch(/^[0-9a-f]{64}$/);
  for (const k of Object.keys(a) as (keyof typeof a)[]) expect(a[k]).not.toBe(b[k]);
});
