/** One jest run for the monorepo: unit tests beside the code, integration and e2e tests under test/. */
const swc = ['@swc/jest', { jsc: { parser: { syntax: 'typescript' }, target: 'es2023' }, module: { type: 'commonjs' } }];
/**
 * Dependencies published as ES modules only. Jest runs tests as CommonJS and can require() an ES module only
 * under --experimental-vm-modules, so these are compiled to CommonJS like our own sources (Node runs them as
 * they are everywhere else). The OTLP exporter's CommonJS build loads node:http with import(), which fails the
 * same way; compiled, it is a require().
 */
const ESM_ONLY = ['http-proxy-middleware', 'httpxy', 'is-plain-obj', '@opentelemetry/otlp-exporter-base'];
const swcJs = ['@swc/jest', { jsc: { parser: { syntax: 'ecmascript' }, target: 'es2023' }, module: { type: 'commonjs' } }];

export default {
  testEnvironment: 'node',
  transform: { '^.+\\.ts$': swc, [`/node_modules/(${ESM_ONLY.join('|')})/.+\\.m?js$`]: swcJs },
  transformIgnorePatterns: [`/node_modules/(?!(${ESM_ONLY.join('|')})/)`],
  extensionsToTreatAsEsm: [],
  moduleFileExtensions: ['ts', 'js', 'mjs', 'json'],
  testMatch: ['<rootDir>/{libs,services,gateway,deploy,test}/**/*.test.ts'],
  testPathIgnorePatterns: ['/node_modules/', '/.cache/', '/.local/'],
  modulePathIgnorePatterns: ['<rootDir>/.cache/', '<rootDir>/.local/'],
  testTimeout: 60_000,
  maxWorkers: 2,
  forceExit: false,
  verbose: false,
};
