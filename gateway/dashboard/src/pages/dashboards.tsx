import { useState, type CSSProperties } from 'react';
import { unwrap } from '../api/client.ts';
import type { DashboardDto, DashboardSummaryDto, InsightDto, Page, QueryResultDto } from '../api/types.ts';
import { NameDialog } from '../components/insight-dialogs.tsx';
import { ResultView } from '../components/result-view.tsx';
import { Button, Card, ConfirmDialog, DataTable, EmptyState, ErrorBanner, Field, FormDialog, ListBody, Loading, NotLoaded, PageHeader, PageNotLoaded } from '../components/ui.tsx';
import { useApi } from '../context.tsx';
import { formatRelative } from '../format.ts';
import { useAction, useDocumentTitle, useResource } from '../hooks.ts';
import { Link, navigate } from '../router.tsx';
import { insightExploreUrl } from './insights.tsx';

/** The grid the API lays tiles out on (see services/analytics/README.md). */
const GRID_COLUMNS = 12;
const MAX_TILE_HEIGHT = 12;

export function DashboardsPage() {
  useDocumentTitle('Dashboards');
  const api = useApi();
  const dashboards = useResource<Page<DashboardSummaryDto>>('dashboards', (a, signal) =>
    unwrap(a.openapi.GET('/analytics/dashboards', { params: { query: { limit: 100 } }, signal })),
  );
  const [creating, setCreating] = useState(false);
  const list = dashboards.data?.data ?? [];
  const create = (
    <Button variant="primary" onClick={() => setCreating(true)}>
      New dashboard
    </Button>
  );
  return (
    <>
      <PageHeader title="Dashboards" description="Insights pinned side by side on a grid; every tile runs afresh when the dashboard opens." actions={create} />
      <ErrorBanner error={dashboards.error} onRetry={() => void dashboards.reload()} />
      <Card>
        <ListBody
          state={dashboards}
          count={list.length}
          empty={
            <EmptyState title="No dashboards yet" icon="▦" action={create}>
              Create one, then pin insights to it from Explore or the Insights page.
            </EmptyState>
          }
        >
          <DataTable
            label="Dashboards"
            rows={list}
            rowKey={(d) => d.id}
            columns={[
              {
                header: 'Name',
                cell: (d) => (
                  <Link to={`/analytics/dashboards/${d.id}`} className="strong-link">
                    {d.name}
                  </Link>
                ),
              },
              { header: 'Tiles', numeric: true, cell: (d) => d.tileCount },
              { header: 'Updated', cell: (d) => formatRelative(d.updatedAt) },
            ]}
          />
        </ListBody>
      </Card>
      <NameDialog
        open={creating}
        title="New dashboard"
        label="Name"
        initial=""
        confirmLabel="Create dashboard"
        onClose={() => setCreating(false)}
        onSubmit={async (name) => {
          const created = await unwrap(api.openapi.POST('/analytics/dashboards', { body: { name } }));
          navigate(`/analytics/dashboards/${created.id}`);
        }}
      />
    </>
  );
}

type Tile = DashboardDto['tiles'][number];
type Move = Partial<Pick<Tile, 'x' | 'y' | 'w' | 'h'>>;

/** One tile: its insight run when the dashboard opens (and on Refresh), drawn with Explore's chart. */
function TileView({ tile, generation, onMove, onRemove, busy }: { tile: Tile; generation: number; onMove: (m: Move) => void; onRemove: () => void; busy: boolean }) {
  const { insight } = tile;
  // Keyed by the insight's last change too: a tile whose insight was edited runs the new query.
  const result = useResource<QueryResultDto>(`tile:${tile.id}:${insight.updatedAt}:${generation}`, (a, signal) =>
    unwrap(a.openapi.POST('/analytics/insights/{id}/run', { params: { path: { id: insight.id } }, signal })),
  );
  const style = { '--tile-x': tile.x + 1, '--tile-y': tile.y + 1, '--tile-w': tile.w, '--tile-h': tile.h } as CSSProperties;
  const label = (what: string) => `${what} ${insight.name}`;
  return (
    <section className="dashboard-tile card" style={style} aria-label={insight.name} data-testid="dashboard-tile">
      <div className="dashboard-tile-header">
        <h2 className="card-title">
          <Link to={insightExploreUrl(insight)}>{insight.name}</Link>
        </h2>
        <div className="dashboard-tile-tools" role="group" aria-label={label('Arrange')}>
          <button type="button" className="icon-btn" aria-label={label('Move left:')} disabled={busy || tile.x === 0} onClick={() => onMove({ x: tile.x - 1 })}>
            ←
          </button>
          <button type="button" className="icon-btn" aria-label={label('Move right:')} disabled={busy || tile.x + tile.w >= GRID_COLUMNS} onClick={() => onMove({ x: tile.x + 1 })}>
            →
          </button>
          <button type="button" className="icon-btn" aria-label={label('Move up:')} disabled={busy || tile.y === 0} onClick={() => onMove({ y: Math.max(0, tile.y - 1) })}>
            ↑
          </button>
          <button type="button" className="icon-btn" aria-label={label('Move down:')} disabled={busy} onClick={() => onMove({ y: tile.y + 1 })}>
            ↓
          </button>
          <button type="button" className="icon-btn" aria-label={label('Narrower:')} disabled={busy || tile.w <= 2} onClick={() => onMove({ w: tile.w - 1 })}>
            −
          </button>
          <button
            type="button"
            className="icon-btn"
            aria-label={label('Wider:')}
            disabled={busy || tile.w >= GRID_COLUMNS}
            onClick={() => onMove(tile.x + tile.w >= GRID_COLUMNS ? { x: tile.x - 1, w: tile.w + 1 } : { w: tile.w + 1 })}
          >
            +
          </button>
          <button type="button" className="icon-btn" aria-label={label('Taller:')} disabled={busy || tile.h >= MAX_TILE_HEIGHT} onClick={() => onMove({ h: tile.h + 1 })}>
            ⇕
          </button>
          <button type="button" className="icon-btn" aria-label={label('Remove from dashboard:')} disabled={busy} onClick={onRemove}>
            ×
          </button>
        </div>
      </div>
      <div className="dashboard-tile-body">
        {result.error ? (
          <ErrorBanner error={result.error} onRetry={() => void result.reload()} />
        ) : !result.data ? (
          <Loading rows={3} label={`Running ${insight.name}…`} />
        ) : (
          <ResultView report={result.data} chartType={insight.chart} compact />
        )}
      </div>
    </section>
  );
}

export function DashboardPage({ id }: { id: string }) {
  const api = useApi();
  const dashboard = useResource<DashboardDto>(`dashboard:${id}`, (a, signal) => unwrap(a.openapi.GET('/analytics/dashboards/{id}', { params: { path: { id } }, signal })));
  const d = dashboard.data;
  useDocumentTitle(d?.name ?? 'Dashboard');
  const [generation, setGeneration] = useState(0);
  const [renaming, setRenaming] = useState(false);
  const [deleting, setDeleting] = useState(false);
  const [adding, setAdding] = useState(false);

  const edit = useAction(async (change: () => Promise<DashboardDto>) => {
    const next = await change();
    dashboard.setData(() => next);
  });
  const move = (tile: Tile, m: Move) =>
    void edit.run(() => unwrap(api.openapi.PATCH('/analytics/dashboards/{id}/tiles/{tileId}', { params: { path: { id, tileId: tile.id } }, body: m })));
  const removeTile = (tile: Tile) => void edit.run(() => unwrap(api.openapi.DELETE('/analytics/dashboards/{id}/tiles/{tileId}', { params: { path: { id, tileId: tile.id } } })));
  const remove = useAction(async () => {
    await unwrap(api.openapi.DELETE('/analytics/dashboards/{id}', { params: { path: { id } } }));
    navigate('/analytics/dashboards');
  });

  if (!d) return <PageNotLoaded title="Dashboard" back={{ to: '/analytics/dashboards', label: 'Dashboards' }} resource={dashboard} rows={6} />;
  return (
    <>
      <PageHeader
        title={d.name}
        back={{ to: '/analytics/dashboards', label: 'Dashboards' }}
        actions={
          <>
            <Button variant="primary" onClick={() => setAdding(true)}>
              Add insight
            </Button>
            <Button onClick={() => setGeneration((g) => g + 1)} disabled={d.tiles.length === 0}>
              Refresh
            </Button>
            <Button variant="ghost" onClick={() => setRenaming(true)}>
              Rename
            </Button>
            <Button variant="ghost" onClick={() => setDeleting(true)}>
              Delete
            </Button>
          </>
        }
      />
      <ErrorBanner error={edit.error} />
      {d.tiles.length === 0 ? (
        <Card>
          <EmptyState
            title="No tiles yet"
            icon="▦"
            action={
              <Button variant="primary" onClick={() => setAdding(true)}>
                Add insight
              </Button>
            }
          >
            Pin insights here from this page, from Explore, or from the Insights page.
          </EmptyState>
        </Card>
      ) : (
        <div className="dashboard-grid" aria-label="Tiles">
          {d.tiles.map((t) => (
            <TileView key={t.id} tile={t} generation={generation} busy={edit.pending} onMove={(m) => move(t, m)} onRemove={() => removeTile(t)} />
          ))}
        </div>
      )}
      <NameDialog
        open={renaming}
        title="Rename dashboard"
        label="Name"
        initial={d.name}
        confirmLabel="Rename"
        onClose={() => setRenaming(false)}
        onSubmit={async (name) => {
          const next = await unwrap(api.openapi.PATCH('/analytics/dashboards/{id}', { params: { path: { id } }, body: { name } }));
          dashboard.setData(() => next);
        }}
      />
      <ConfirmDialog
        open={deleting}
        title={`Delete “${d.name}”?`}
        confirmLabel="Delete dashboard"
        onConfirm={() => void remove.run()}
        onClose={() => setDeleting(false)}
        pending={remove.pending}
        error={remove.error}
      >
        The dashboard and its tiles go; the insights stay.
      </ConfirmDialog>
      <AddInsightDialog
        open={adding}
        onClose={() => setAdding(false)}
        onAdd={async (insightId) => {
          const next = await unwrap(api.openapi.POST('/analytics/dashboards/{id}/tiles', { params: { path: { id } }, body: { insightId, w: 6, h: 4 } }));
          dashboard.setData(() => next);
        }}
      />
    </>
  );
}

function AddInsightDialog({ open, onClose, onAdd }: { open: boolean; onClose: () => void; onAdd: (insightId: string) => Promise<void> }) {
  const insights = useResource<Page<InsightDto>>(open ? 'insights' : null, (a, signal) =>
    unwrap(a.openapi.GET('/analytics/insights', { params: { query: { limit: 100 } }, signal })),
  );
  const [choice, setChoice] = useState('');
  const add = useAction(async () => {
    const id = choice || insights.data?.data[0]?.id;
    if (!id) return;
    await onAdd(id);
    onClose();
  });
  const list = insights.data?.data ?? [];
  return (
    <FormDialog
      open={open}
      onClose={onClose}
      title="Add an insight"
      description="It takes the first free place on the grid; move it from there."
      onSubmit={add.run}
      submitLabel="Add to dashboard"
      submitDisabled={list.length === 0}
      pending={add.pending}
      error={add.error}
    >
      {!insights.data ? (
        <NotLoaded resource={insights} rows={1} />
      ) : list.length === 0 ? (
        <p className="muted">
          No insights yet: build a query in <Link to="/analytics">Explore</Link> and save it as an insight.
        </p>
      ) : (
        <Field label="Insight">
          {(p) => (
            <select {...p} className="input" value={choice || list[0]!.id} onChange={(e) => setChoice(e.target.value)}>
              {list.map((i) => (
                <option key={i.id} value={i.id}>
                  {i.name}
                </option>
              ))}
            </select>
          )}
        </Field>
      )}
    </FormDialog>
  );
}
