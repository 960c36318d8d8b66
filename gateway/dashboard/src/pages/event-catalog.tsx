import { Fragment } from 'react';
import { ApiError } from '../api/client.ts';
import { Card, CopyButton, ErrorBanner, Loading, PageHeader } from '../components/ui.tsx';
import { useDocumentTitle, useResource } from '../hooks.ts';
import { Link } from '../router.tsx';

interface CatalogEntry {
  type: string;
  meaning: string;
  sample: unknown;
}

type WebhooksSection = Record<string, { post?: { summary?: string; description?: string; requestBody?: { content?: { 'application/json'?: { example?: unknown } } } } }>;

/** The event catalog of the OpenAPI document the gateway serves (its `webhooks`, which /docs shows too). */
async function loadCatalog(signal: AbortSignal): Promise<CatalogEntry[]> {
  const res = await fetch('/v1/openapi.json', { signal, headers: { accept: 'application/json' } });
  if (!res.ok) throw new ApiError({ status: res.status, code: 'http_error', title: 'The event catalog could not be loaded', detail: res.statusText });
  const doc = (await res.json()) as { webhooks?: WebhooksSection };
  return Object.entries(doc.webhooks ?? {}).map(([type, w]) => ({
    type,
    // The first paragraph says what the event means; the rest (delivery and signatures) is the same for all.
    meaning: (w.post?.description ?? '').split('\n\n')[0] ?? '',
    sample: w.post?.requestBody?.content?.['application/json']?.example ?? null,
  }));
}

/** `code` spans of the catalog's Markdown as <code>, the rest as text. */
function InlineMarkdown({ text }: { text: string }) {
  return (
    <>
      {text.split(/(`[^`]+`)/).map((part, i) => (
        <Fragment key={i}>{part.startsWith('`') && part.endsWith('`') && part.length > 1 ? <code>{part.slice(1, -1)}</code> : part}</Fragment>
      ))}
    </>
  );
}

export function EventCatalogPage() {
  useDocumentTitle('Event catalog');
  const catalog = useResource<CatalogEntry[]>('event-catalog', (_api, signal) => loadCatalog(signal));
  return (
    <>
      <PageHeader
        eyebrow="Webhooks"
        title="Event catalog"
        back={{ to: '/webhooks', label: 'Webhooks' }}
        description={
          <>
            Every event a webhook endpoint can subscribe to, and a sample of the JSON body we POST for it. Subscribe to one type, a family such as <code>source.*</code>, or{' '}
            <code>*</code>. The same catalog is in the <a href="/docs">API reference</a>, with how to verify signatures.
          </>
        }
      />
      <ErrorBanner error={catalog.error} onRetry={() => void catalog.reload()} />
      {!catalog.data ? (
        !catalog.error && <Loading rows={6} />
      ) : (
        <ul className="event-catalog" aria-label="Event types">
          {catalog.data.map((e) => {
            const sample = JSON.stringify(e.sample, null, 2);
            return (
              <li key={e.type} data-testid="event-type" data-event-type={e.type}>
                <Card title={<code>{e.type}</code>}>
                  <p className="event-meaning">
                    <InlineMarkdown text={e.meaning} />
                  </p>
                  <p className="section-title small">Sample payload</p>
                  <pre className="code-block" aria-label={`Sample ${e.type} payload`}>
                    <code>{sample}</code>
                  </pre>
                  <CopyButton value={sample} label="Copy sample" size="sm" />
                </Card>
              </li>
            );
          })}
        </ul>
      )}
      <p className="muted small">
        Add an endpoint on the <Link to="/webhooks">Webhooks</Link> page and send it a test event to see a real delivery.
      </p>
    </>
  );
}
