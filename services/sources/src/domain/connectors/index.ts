import type { RemoteSourceType, SourceType } from '@dap/contracts';
import type { AnyConnector, RemoteConnector, UploadConnector, UploadSourceType } from './connector.ts';
import { csvConnector } from './csv.connector.ts';
import { inlineConnector } from './inline.connector.ts';
import { jsonConnector, ndjsonConnector } from './json.connector.ts';
import { mongodbConnector } from './mongodb.connector.ts';
import { mysqlConnector } from './mysql.connector.ts';
import { postgresConnector } from './postgres.connector.ts';
import { urlConnector } from './url.connector.ts';

export {
  ConnectorCheckError,
  type AnyConnector,
  type BodyOf,
  type ConnectorContext,
  type PullResult,
  type RemoteConnector,
  type RemoteLimits,
  type UploadConnector,
} from './connector.ts';

type ConnectorOf<T extends SourceType> = T extends RemoteSourceType ? RemoteConnector<T> : T extends UploadSourceType ? UploadConnector<T> : never;

/** Adding a source type is a new connector module plus one line here (and its body in the contracts). */
const CONNECTORS: { readonly [T in SourceType]: ConnectorOf<T> } = Object.freeze({
  inline: inlineConnector,
  csv: csvConnector,
  json: jsonConnector,
  ndjson: ndjsonConnector,
  url: urlConnector as RemoteConnector<'url'>,
  postgres: postgresConnector as RemoteConnector<'postgres'>,
  mysql: mysqlConnector as RemoteConnector<'mysql'>,
  mongodb: mongodbConnector as RemoteConnector<'mongodb'>,
});

export function connectorFor(type: SourceType): AnyConnector {
  return CONNECTORS[type] as AnyConnector;
}
