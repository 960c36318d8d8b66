import type { SourceType } from '@dap/contracts';
import type { Connector } from './connector.ts';
import { csvConnector } from './csv.connector.ts';
import { inlineConnector } from './inline.connector.ts';
import { jsonConnector, ndjsonConnector } from './json.connector.ts';

export { ConnectorCheckError, type Connector, type ConnectorContext, type BodyOf } from './connector.ts';

/** Adding a source type is a new connector module plus one line here (and its body in the contracts). */
const CONNECTORS: { readonly [T in SourceType]: Connector<T> } = Object.freeze({
  inline: inlineConnector,
  csv: csvConnector,
  json: jsonConnector,
  ndjson: ndjsonConnector,
});

export function connectorFor<T extends SourceType>(type: T): Connector<T> {
  return CONNECTORS[type] as Connector<T>;
}
