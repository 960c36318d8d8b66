import { useState } from 'react';
import { unwrap } from '../api/client.ts';
import type { Page, SourceDto } from '../api/types.ts';
import { Button, ButtonLink, Card, ConfirmDialog, DataTable, EmptyState, ErrorBanner, ListBody, PageHeader, StatusBadge } from '../components/ui.tsx';
import { useApi, useNotify } from '../context.tsx';
import { formatInt, formatRelative } from '../format.ts';
import { useAction, useDocumentTitle, useInterval, useResource } from '../hooks.ts';
import { Link } from '../router.tsx';
import { SOURCE_TYPE_LABELS } from './connect-source.tsx';

export const isBusy = (s: SourceDto) => s.status === 'pending' || s.status === 'syncing';

/** Re-sync and delete, shared by the list and the detail page. */
export function useSourceActions(onChange: () => void) {
  const api = useApi();
  const notify = useNotify();
  // `full` pulls an incremental source's data again from the start.
  const sync = useAction(async (s: SourceDto, mode?: 'full') => {
    await unwrap(api.openapi.POST('/sources/{id}/sync', { params: { path: { id: s.id } }, ...(mode ? { body: { mode } } : {}) }));
    notify(mode === 'full' ? `Re-syncing “${s.name}” in full` : `Syncing “${s.name}”`, 'info');
    onChange();
    return true;
  });
  const remove = useAction(async (s: SourceDto) => {
    await unwrap(api.openapi.DELETE('/sources/{id}', { params: { path: { id: s.id } } }));
    notify(`Source “${s.name}” deleted`);
    return true;
  });
  return { sync, remove };
}

export function DeleteSourceDialog({
  target,
  onClose,
  onDeleted,
  action,
}: {
  target: SourceDto | null;
  onClose: () => void;
  onDeleted: () => void;
  action: ReturnType<typeof useSourceActions>['remove'];
}) {
  return (
    <ConfirmDialog
      open={target !== null}
      title={`Delete “${target?.name ?? ''}”?`}
      confirmLabel="Delete source"
      pending={action.pending}
      error={action.error}
      onClose={() => {
        action.setError(null);
        onClose();
      }}
      onConfirm={async () => {
        if (target && (await action.run(target))) onDeleted();
      }}
    >
      <p>Its {target ? formatInt(target.rowCount) : ''} ingested rows are removed. Saved reports keep their results, but new queries on this source will fail.</p>
    </ConfirmDialog>
  );
}

export function SourcesPage() {
  useDocumentTitle('Sources');
  const sources = useResource<Page<SourceDto>>('sources', (api, signal) => unwrap(api.openapi.GET('/sources', { params: { query: { limit: 100 } }, signal })));
  const list = sources.data?.data ?? [];
  const busy = list.some(isBusy);
  useInterval(() => void sources.reload(), busy ? 2_000 : null);
  const actions = useSourceActions(() => void sources.reload());
  const [deleting, setDeleting] = useState<SourceDto | null>(null);

  return (
    <>
      <PageHeader
        title="Sources"
        description="The data you analyse and train on. Each source is ingested into fast columnar storage; re-sync it when the original changes."
        actions={
          <ButtonLink to="/sources/new" variant="primary">
            + Connect source
          </ButtonLink>
        }
      />
      <ErrorBanner error={sources.error} onRetry={() => void sources.reload()} />
      <ErrorBanner error={actions.sync.error} />
      <Card>
        <ListBody
          state={sources}
          count={list.length}
          rows={4}
          empty={
            <EmptyState
              title="No sources yet"
              icon="🗄"
              action={
                <ButtonLink to="/sources/new" variant="primary">
                  Connect your first source
                </ButtonLink>
              }
            >
              Paste rows, upload a CSV, JSON or NDJSON file, and query it in seconds.
            </EmptyState>
          }
        >
          <DataTable
            label="Sources"
            rows={list}
            rowKey={(s) => s.id}
            rowData={(s) => ({ 'data-source-id': s.id })}
            columns={[
              {
                header: 'Name',
                cell: (s) => (
                  <>
                    <Link to={`/sources/${s.id}`} className="strong-link">
                      {s.name}
                    </Link>
                    {s.status === 'failed' && s.error && <p className="cell-error">{s.error}</p>}
                    {s.status !== 'failed' && s.lastSync?.status === 'failed' && <p className="cell-error">Last sync failed: {s.lastSync.error}</p>}
                  </>
                ),
              },
              { header: 'Type', cell: (s) => SOURCE_TYPE_LABELS[s.type] ?? s.type },
              { header: 'Status', cell: (s) => <StatusBadge status={s.status} /> },
              { header: 'Rows', numeric: true, cell: (s) => formatInt(s.rowCount) },
              { header: 'Columns', numeric: true, cell: (s) => s.schema.length },
              {
                header: 'Last synced',
                cell: (s) => (
                  <>
                    {s.lastSyncedAt ? formatRelative(s.lastSyncedAt) : '—'}
                    {s.lastSync?.mode === 'incremental' && <p className="muted">incremental, {formatInt(s.lastSync.rowsPulled ?? 0)} rows pulled</p>}
                  </>
                ),
              },
              { header: 'Next sync', cell: (s) => (s.nextSyncAt ? formatRelative(s.nextSyncAt) : '—') },
              {
                header: 'Actions',
                hiddenHeader: true,
                className: 'cell-actions',
                cell: (s) => (
                  <>
                    <Button size="sm" onClick={() => void actions.sync.run(s)} disabled={isBusy(s)} aria-label={`Re-sync ${s.name}`}>
                      Re-sync
                    </Button>
                    <Button size="sm" variant="danger" onClick={() => setDeleting(s)} aria-label={`Delete ${s.name}`}>
                      Delete
                    </Button>
                  </>
                ),
              },
            ]}
          />
        </ListBody>
      </Card>
      <DeleteSourceDialog
        target={deleting}
        action={actions.remove}
        onClose={() => setDeleting(null)}
        onDeleted={() => {
          setDeleting(null);
          void sources.reload();
        }}
      />
    </>
  );
}
