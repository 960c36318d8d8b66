import { useState } from 'react';
import { unwrap } from '../api/client.ts';
import type { InsightDto, Page, QueryResultDto } from '../api/types.ts';
import { NameDialog, PinDialog } from '../components/insight-dialogs.tsx';
import { ResultView } from '../components/result-view.tsx';
import { Badge, Button, ButtonLink, Card, ConfirmDialog, EmptyState, ErrorBanner, ListBody, PageHeader } from '../components/ui.tsx';
import { useApi } from '../context.tsx';
import { builderStateFromQuery, exploreUrl } from '../explore-state.ts';
import { formatMs, formatNumber, formatRelative } from '../format.ts';
import { useAction, useDocumentTitle, useResource } from '../hooks.ts';
import { Link, navigate } from '../router.tsx';
import { describeQuery } from '../query-text.ts';

/** Where an insight opens in Explore: its query in the builder, its chart, and its id (so Save updates it). */
export function insightExploreUrl(insight: InsightDto): string {
  const st = builderStateFromQuery(insight.query);
  const base = st ? exploreUrl(st, insight.chart) : `/analytics?chart=${insight.chart}`;
  return `${base}&insight=${encodeURIComponent(insight.id)}`;
}

export function InsightsPage() {
  useDocumentTitle('Insights');
  const api = useApi();
  const insights = useResource<Page<InsightDto>>('insights', (a, signal) => unwrap(a.openapi.GET('/analytics/insights', { params: { query: { limit: 100 } }, signal })));
  const [renaming, setRenaming] = useState<InsightDto | null>(null);
  const [deleting, setDeleting] = useState<InsightDto | null>(null);
  const [pinning, setPinning] = useState<InsightDto | null>(null);
  const [pinned, setPinned] = useState<{ id: string; name: string } | null>(null);
  const [results, setResults] = useState<Record<string, QueryResultDto>>({});

  const runOne = useAction(async (id: string) => {
    const result = await unwrap(api.openapi.POST('/analytics/insights/{id}/run', { params: { path: { id } } }));
    setResults((r) => ({ ...r, [id]: result }));
  });
  const [running, setRunning] = useState<string | null>(null);
  const rerun = async (id: string) => {
    setRunning(id);
    await runOne.run(id);
    setRunning(null);
  };
  const remove = useAction(async (id: string) => {
    await unwrap(api.openapi.DELETE('/analytics/insights/{id}', { params: { path: { id } } }));
    insights.setData((old) => old && { ...old, data: old.data.filter((i) => i.id !== id) });
    setDeleting(null);
  });

  const list = insights.data?.data ?? [];
  return (
    <>
      <PageHeader
        title="Insights"
        description="Queries you saved with a name: run them again, open them in Explore, or pin them to a dashboard."
        actions={
          <ButtonLink to="/analytics" variant="primary">
            New insight
          </ButtonLink>
        }
      />
      <ErrorBanner error={insights.error} onRetry={() => void insights.reload()} />
      {pinned && (
        <p className="muted" role="status">
          Added to <Link to={`/analytics/dashboards/${pinned.id}`}>{pinned.name}</Link>.
        </p>
      )}
      <ListBody
        state={insights}
        count={list.length}
        rows={4}
        empty={
          <Card>
            <EmptyState
              title="No insights yet"
              icon="💡"
              action={
                <ButtonLink to="/analytics" variant="primary">
                  Explore your data
                </ButtonLink>
              }
            >
              Build a query in Explore and press <strong>Save as insight</strong>.
            </EmptyState>
          </Card>
        }
      >
        <ul className="insight-list" aria-label="Insights">
          {list.map((i) => {
            const result = results[i.id];
            return (
              <li key={i.id}>
                <Card
                  title={i.name}
                  actions={
                    <>
                      <Button size="sm" variant="primary" loading={running === i.id} onClick={() => void rerun(i.id)} aria-label={`Run ${i.name}`}>
                        Run
                      </Button>
                      <Button size="sm" onClick={() => navigate(insightExploreUrl(i))} aria-label={`Open ${i.name} in Explore`}>
                        Open in Explore
                      </Button>
                      <Button size="sm" onClick={() => setPinning(i)} aria-label={`Add ${i.name} to a dashboard`}>
                        Add to dashboard
                      </Button>
                      <Button size="sm" variant="ghost" onClick={() => setRenaming(i)} aria-label={`Rename ${i.name}`}>
                        Rename
                      </Button>
                      <Button size="sm" variant="ghost" onClick={() => setDeleting(i)} aria-label={`Delete ${i.name}`}>
                        Delete
                      </Button>
                    </>
                  }
                >
                  <p className="muted small">
                    {describeQuery(i.query)} · <Badge>{i.chart}</Badge> · updated {formatRelative(i.updatedAt)}
                  </p>
                  {running !== i.id && runOne.error && !result && <ErrorBanner error={runOne.error} />}
                  {result && (
                    <>
                      <p className="result-meta">
                        <Badge>{formatNumber(result.rowCount)} rows</Badge>
                        <Badge>{formatMs(result.durationMs)}</Badge>
                      </p>
                      <ResultView report={result} chartType={i.chart} compact />
                    </>
                  )}
                </Card>
              </li>
            );
          })}
        </ul>
      </ListBody>
      <NameDialog
        open={renaming !== null}
        title="Rename insight"
        label="Name"
        initial={renaming?.name ?? ''}
        confirmLabel="Rename"
        onClose={() => setRenaming(null)}
        onSubmit={async (name) => {
          const updated = await unwrap(api.openapi.PATCH('/analytics/insights/{id}', { params: { path: { id: renaming!.id } }, body: { name } }));
          insights.setData((old) => old && { ...old, data: old.data.map((x) => (x.id === updated.id ? updated : x)) });
        }}
      />
      <ConfirmDialog
        open={deleting !== null}
        title={`Delete “${deleting?.name ?? ''}”?`}
        confirmLabel="Delete insight"
        onConfirm={() => deleting && void remove.run(deleting.id)}
        onClose={() => setDeleting(null)}
        pending={remove.pending}
        error={remove.error}
      >
        The insight and its tiles on every dashboard are removed. Reports are not affected.
      </ConfirmDialog>
      <PinDialog open={pinning !== null} insightId={pinning?.id ?? null} onClose={() => setPinning(null)} onPinned={(d) => setPinned({ id: d.id, name: d.name })} />
    </>
  );
}
