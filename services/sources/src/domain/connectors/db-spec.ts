import { z } from 'zod';
import { SSL_MODES, type SourceConfigDto, type SslMode } from '@dap/contracts';
import { bareHost } from '@dap/netguard';
import { ConnectorCheckError, type BodyOf } from './connector.ts';

export type DbType = 'postgres' | 'mysql' | 'mongodb';

/** Where and how to connect, normalized from a URL or from parts; what gets sealed with the credentials key. */
export interface DbConnection {
  host: string;
  port: number;
  database: string;
  user?: string;
  password?: string;
  ssl: SslMode;
  authSource?: string;
}

export const dbConnectionSchema = z.object({
  host: z.string().min(1),
  port: z.number().int().min(1).max(65535),
  database: z.string().min(1),
  user: z.string().optional(),
  password: z.string().optional(),
  ssl: z.enum(SSL_MODES),
  authSource: z.string().optional(),
});

const DEFAULT_PORTS: Record<DbType, number> = { postgres: 5432, mysql: 3306, mongodb: 27017 };

const SSL_ALIASES: Record<string, SslMode> = {
  disable: 'disable',
  disabled: 'disable',
  false: 'disable',
  require: 'require',
  required: 'require',
  true: 'require',
  'verify-full': 'verify-full',
  verify_identity: 'verify-full',
};

function sslFrom(params: URLSearchParams, type: DbType): SslMode | undefined {
  const raw = params.get('sslmode') ?? params.get('ssl-mode') ?? params.get('ssl') ?? params.get('tls');
  if (raw === null) return undefined;
  const mode = SSL_ALIASES[raw.toLowerCase()];
  if (!mode)
    throw new ConnectorCheckError(
      'connection.url',
      `unsupported ${type === 'mongodb' ? 'tls' : 'sslmode'} ${JSON.stringify(raw.slice(0, 20))}; use disable, require or verify-full`,
    );
  if (type === 'mongodb' && mode === 'require' && params.get('tlsAllowInvalidCertificates') !== 'true') return 'verify-full';
  return mode;
}

function decode(part: string, what: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    throw new ConnectorCheckError('connection.url', `the ${what} in the URL is not correctly percent-encoded`);
  }
}

/** Normalizes a source's `connection` (already validated by the contract) into connect details. */
export function connectionOf(type: DbType, c: BodyOf<DbType>['connection']): DbConnection {
  if (c.url !== undefined) {
    const u = new URL(c.url);
    const user = u.username ? decode(u.username, 'user') : undefined;
    const password = u.password ? decode(u.password, 'password') : undefined;
    const database = decode(u.pathname.replace(/^\//, ''), 'database');
    const authSource = type === 'mongodb' ? (u.searchParams.get('authSource') ?? (user ? database : undefined)) : undefined;
    return {
      host: bareHost(u.hostname),
      port: u.port ? Number(u.port) : DEFAULT_PORTS[type],
      database,
      ...(user !== undefined ? { user } : {}),
      ...(password !== undefined ? { password } : {}),
      ssl: c.ssl ?? sslFrom(u.searchParams, type) ?? 'disable',
      ...(authSource ? { authSource } : {}),
    };
  }
  const authSource = (c as { authSource?: string }).authSource ?? (type === 'mongodb' && c.user ? 'admin' : undefined);
  return {
    host: bareHost(c.host!),
    port: c.port ?? DEFAULT_PORTS[type],
    database: c.database!,
    ...(c.user !== undefined ? { user: c.user } : {}),
    ...(c.password !== undefined ? { password: c.password } : {}),
    ssl: c.ssl ?? 'disable',
    ...(authSource ? { authSource } : {}),
  };
}

/** The connection as the API shows it: never the password, only whether one is stored. */
export function publicConnection(c: DbConnection): SourceConfigDto {
  return {
    host: c.host,
    port: c.port,
    database: c.database,
    ...(c.user !== undefined ? { user: c.user } : {}),
    ssl: c.ssl,
    ...(c.authSource ? { authSource: c.authSource } : {}),
    hasPassword: Boolean(c.password),
  };
}

/** A SQL source (PostgreSQL, MySQL/MariaDB): a whole table, or the customer's own read-only query. */
export interface SqlSpec extends DbConnection {
  table?: string;
  query?: string;
}

export const sqlSpecSchema = dbConnectionSchema.extend({ table: z.string().optional(), query: z.string().optional() });

/** The statement a source reads: a whole table, or the customer's own SELECT (minus a trailing semicolon). */
export function sqlOf(spec: Pick<SqlSpec, 'table' | 'query'>, quote: (s: string) => string): string {
  if (spec.table) return `SELECT * FROM ${spec.table.split('.').map(quote).join('.')}`;
  return spec.query!.trim().replace(/;\s*$/, '');
}

/** How long to wait for a clean close before dropping the socket. */
export async function closeQuietly(close: () => Promise<unknown>, destroy: () => void, ms = 1_000): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([close().catch(() => undefined), new Promise((r) => (timer = setTimeout(r, ms)))]);
  } finally {
    clearTimeout(timer);
    destroy();
  }
}
