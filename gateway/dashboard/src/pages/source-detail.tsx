import { useState, type ReactNode } from 'react';
import { unwrap } from '../api/client.ts';
import type { SourceDto } from '../api/types.ts';
import { Alert, Badge, Button, ButtonLink, Card, ErrorBanner, KeyValue, PageHeader, PageNotLoaded, TableWrap } from '../components/ui.tsx';
import { formatDate, formatInt } from '../format.ts';
import { useDocumentTitle, useInterval, useResource } from '../hooks.ts';
import { navigate } from '../router.tsx';
import { SOURCE_TYPE_LABELS } from './connect-source.tsx';
import { DeleteSourceDialog, isBusy, useSourceActions } from './sources.tsx';
import { SyncSettingsCard } from './source-settings.tsx';

const TYPE_TONES: Record<string, 'info' | 'success' | 'warning' | 'accent' | 'neutral'> = {
  string: 'neutral',
  integer: 'info',
  number: 'info',
  boolean: 'warning',
  timestamp: 'accent',
};

const CONFIG_LABELS: Record<string, string> = {
  url: 'URL',
  format: 'Format',
  headers: 'Headers',
  host: 'Host',
  port: 'Port',
  database: 'Database',
  user: 'User',
  ssl: 'TLS',
  authSource: 'Auth database',
  table: 'Table',
  query: 'Query',
  collection: 'Collection',
  filter: 'Filter',
  hasPassword: 'Password',
};

/** The source's non-secret settings (the API never returns passwords or header values). */
function configItems(s: SourceDto): [string, ReactNode][] {
  const config = (s.config ?? {}) as Record<string, unknown>;
  return Object.entries(config)
    .filter(([, v]) => v !== undefined && v !== null && v !== '' && !(Array.isArray(v) && v.length === 0))
    .map(([k, v]): [string, ReactNode] => [
      CONFIG_LABELS[k] ?? k,
      k === 'hasPassword' ? (
        v ? (
          'stored (encrypted)'
        ) : (
          'none'
        )
      ) : k === 'query' || k === 'filter' ? (
        <pre key={k} className="code-block">
          <code>{String(v)}</code>
        </pre>
      ) : Array.isArray(v) ? (
        v.join(', ')
      ) : (
        <code key={k}>{String(v)}</code>
      ),
    ]);
}

export function SourceDetailPage({ id }: { id: string }) {
  const source = useResource<SourceDto>(`source:${id}`, (api, signal) => unwrap(api.openapi.GET('/sources/{id}', { params: { path: { id } }, signal })));
  const s = source.data;
  useDocumentTitle(s?.name ?? 'Source');
  useInterval(() => void source.reload(), s && isBusy(s) ? 1_500 : null);
  const actions = useSourceActions(() => void source.reload());
  const [deleting, setDeleting] = useState(false);

  if (!s) return <PageNotLoaded title="Source" back={{ to: '/sources', label: 'Sources' }} resource={source} />;
  return (
    <>
      <PageHeader
        title={s.name}
        status={s.status}
        back={{ to: '/sources', label: 'Sources' }}
        actions={
          <>
            {s.status === 'ready' && (
              <ButtonLink to={`/analytics?source=${encodeURIComponent(s.id)}`} variant="primary">
                Explore data
              </ButtonLink>
            )}
            <Button onClick={() => void actions.sync.run(s)} loading={actions.sync.pending} disabled={isBusy(s)}>
              Re-sync
            </Button>
            {s.incremental && (
              <Button onClick={() => void actions.sync.run(s, 'full')} disabled={isBusy(s) || actions.sync.pending} title="Pull every row again and restart the cursor">
                Full re-sync
              </Button>
            )}
            <Button variant="danger" onClick={() => setDeleting(true)}>
              Delete
            </Button>
          </>
        }
      />
      <ErrorBanner error={actions.sync.error} />
      {s.status === 'failed' && (
        <Alert tone="error" title="The last sync failed">
          <p>{s.error ?? 'The source could not be read.'}</p>
          <p>Fix the data or its settings, then re-sync.</p>
        </Alert>
      )}
      {s.status !== 'failed' && s.lastSync?.status === 'failed' && (
        <Alert tone="warning" title="The last sync failed">
          <p>{s.lastSync.error ?? 'The source could not be read.'}</p>
          <p>Queries and training keep using the data synced {formatDate(s.lastSyncedAt)}. Fix the data or its settings, then re-sync.</p>
        </Alert>
      )}
      {isBusy(s) && (
        <Alert tone="info" title={s.status === 'pending' ? 'Waiting to sync' : 'Syncing'}>
          <p>The data is being read and stored. This page updates by itself.</p>
        </Alert>
      )}
      <div className="grid grid-1-2">
        <Card title="Details">
          <KeyValue
            items={[
              [
                'Rows',
                <span key="r" data-testid="row-count">
                  {formatInt(s.rowCount)}
                </span>,
              ],
              ['Columns', String(s.schema.length)],
              ['Type', SOURCE_TYPE_LABELS[s.type] ?? s.type],
              ['Last synced', formatDate(s.lastSyncedAt)],
              ['Created', formatDate(s.createdAt)],
              ['ID', <code key="id">{s.id}</code>],
            ]}
          />
          {configItems(s).length > 0 && (
            <>
              <h3 className="subheading">Connection</h3>
              <KeyValue items={configItems(s)} />
            </>
          )}
        </Card>
        <Card title="Schema">
          {s.schema.length === 0 ? (
            <p className="muted">The schema appears once the first sync finishes.</p>
          ) : (
            <TableWrap label="Schema">
              <table className="table table-compact">
                <thead>
                  <tr>
                    <th scope="col">Column</th>
                    <th scope="col">Type</th>
                  </tr>
                </thead>
                <tbody>
                  {s.schema.map((c) => (
                    <tr key={c.name}>
                      <td className="mono">{c.name}</td>
                      <td>
                        <Badge tone={TYPE_TONES[c.type] ?? 'neutral'}>{c.type}</Badge>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </TableWrap>
          )}
        </Card>
      </div>
      <SyncSettingsCard key={s.updatedAt} source={s} onSaved={() => void source.reload()} />
      <DeleteSourceDialog target={deleting ? s : null} action={actions.remove} onClose={() => setDeleting(false)} onDeleted={() => navigate('/sources', { replace: true })} />
    </>
  );
}
