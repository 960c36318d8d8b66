/** One jest run for the monorepo: unit tests beside the code, integration and e2e tests under test/. */
const swc = ['@swc/jest', { jsc: { parser: { syntax: 'typescript' }, target: 'es2023' }, module: { type: 'commonjs' } }];

export default {
  testEnvironment: 'node',
  transform: { '^.+\\.ts$': swc },
  extensionsToTreatAsEsm: [],
  moduleFileExtensions: ['ts', 'js', 'json'],
  testMatch: ['<rootDir>/{libs,services,gateway,deploy,test}/**/*.test.ts'],
  testPathIgnorePatterns: ['/node_modules/', '/.cache/', '/.local/'],
  modulePathIgnorePatterns: ['<rootDir>/.cache/', '<rootDir>/.local/'],
  testTimeout: 60_000,
  maxWorkers: 2,
  forceExit: false,
  verbose: false,
};
