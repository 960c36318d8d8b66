import { useState } from 'react';
import { unwrap } from '../api/client.ts';
import type { Page, ReportDto, ReportSummaryDto, SourceDto } from '../api/types.ts';
import { ResultView } from '../components/result-view.tsx';
import {
  Alert,
  Badge,
  Button,
  ButtonLink,
  Card,
  CopyButton,
  DataTable,
  EmptyState,
  ErrorBanner,
  KeyValue,
  ListBody,
  Loading,
  PageHeader,
  PageNotLoaded,
  StatusBadge,
} from '../components/ui.tsx';
import { useApi } from '../context.tsx';
import { formatDate, formatMs, formatNumber, formatRelative } from '../format.ts';
import { useDocumentTitle, useInterval, useResource } from '../hooks.ts';
import { Link } from '../router.tsx';
import { describeQuery } from '../query-text.ts';
import { useNames } from '../names.tsx';

/** Source names for these ids: from the first page of sources, the others looked up one by one (never shown as ids). */
function useSourceNames(ids: unknown[]) {
  const sources = useResource<Page<SourceDto>>('sources', (api, signal) => unwrap(api.openapi.GET('/sources', { params: { query: { limit: 100 } }, signal })));
  const listed = (id: unknown) => sources.data?.data.find((s) => s.id === id)?.name;
  const names = useNames(sources.data ? ids.filter((id): id is string => typeof id === 'string' && !listed(id)) : []);
  return (id: unknown) => listed(id) ?? (typeof id === 'string' ? names(id)?.name : undefined) ?? (typeof id === 'string' ? 'a source' : '—');
}

export function ReportsPage() {
  useDocumentTitle('Reports');
  const api = useApi();
  const reports = useResource<Page<ReportSummaryDto>>('reports', (a, signal) => unwrap(a.openapi.GET('/analytics/reports', { params: { query: { limit: 50 } }, signal })));
  const [more, setMore] = useState<{ items: ReportSummaryDto[]; cursor: string | null; loading: boolean }>({ items: [], cursor: null, loading: false });
  const list = [...(reports.data?.data ?? []), ...more.items];
  const cursor = more.items.length ? more.cursor : (reports.data?.nextCursor ?? null);
  const running = list.some((r) => r.status === 'running');
  const sourceName = useSourceNames(list.map((r) => r.query.sourceId));
  useInterval(() => void reports.reload(), running ? 2_000 : null);

  const loadMore = async () => {
    if (!cursor) return;
    setMore((m) => ({ ...m, loading: true }));
    try {
      const page = await unwrap(api.openapi.GET('/analytics/reports', { params: { query: { limit: 50, cursor } } }));
      setMore((m) => ({ items: [...m.items, ...page.data], cursor: page.hasMore ? page.nextCursor : null, loading: false }));
    } catch {
      setMore((m) => ({ ...m, loading: false }));
    }
  };

  return (
    <>
      <PageHeader
        title="Reports"
        description="Every query you run, from here or the API, is saved with its result."
        actions={
          <ButtonLink to="/analytics" variant="primary">
            New query
          </ButtonLink>
        }
      />
      <ErrorBanner error={reports.error} onRetry={() => void reports.reload()} />
      <Card>
        <ListBody
          state={reports}
          count={list.length}
          rows={4}
          empty={
            <EmptyState
              title="No reports yet"
              icon="📄"
              action={
                <ButtonLink to="/analytics" variant="primary">
                  Run a query
                </ButtonLink>
              }
            >
              Run a query in Explore or with <code>POST /v1/analytics/query</code>.
            </EmptyState>
          }
        >
          <DataTable
            label="Reports"
            rows={list}
            rowKey={(r) => r.id}
            columns={[
              {
                header: 'Query',
                cell: (r) => (
                  <Link to={`/analytics/reports/${r.id}`} className="strong-link">
                    {describeQuery(r.query)}
                  </Link>
                ),
              },
              { header: 'Source', cell: (r) => sourceName(r.query.sourceId) },
              { header: 'Status', cell: (r) => <StatusBadge status={r.status} /> },
              { header: 'Rows', numeric: true, cell: (r) => formatNumber(r.rowCount) },
              { header: 'Time', numeric: true, cell: (r) => formatMs(r.durationMs) },
              { header: 'Created', cell: (r) => formatRelative(r.createdAt) },
            ]}
          />
        </ListBody>
        {cursor && (reports.data?.hasMore || more.items.length > 0) && (
          <div className="load-more">
            <Button onClick={() => void loadMore()} loading={more.loading}>
              Load more
            </Button>
          </div>
        )}
      </Card>
    </>
  );
}

export function ReportDetailPage({ id }: { id: string }) {
  const report = useResource<ReportDto>(`report:${id}`, (api, signal) => unwrap(api.openapi.GET('/analytics/reports/{id}', { params: { path: { id } }, signal })));
  const r = report.data;
  const sourceName = useSourceNames(r ? [r.query.sourceId] : []);
  useDocumentTitle(r ? describeQuery(r.query) : 'Report');
  useInterval(() => void report.reload(), r?.status === 'running' ? 1_500 : null);

  if (!r) return <PageNotLoaded title="Report" back={{ to: '/analytics/reports', label: 'Reports' }} resource={report} rows={6} />;
  const json = JSON.stringify(r.query, null, 2);
  return (
    <>
      <PageHeader
        title={describeQuery(r.query)}
        back={{ to: '/analytics/reports', label: 'Reports' }}
        actions={
          r.status === 'completed' && (
            <>
              <a className="btn btn-secondary" href={`/v1/analytics/reports/${encodeURIComponent(r.id)}/export.csv`} download>
                Download CSV
              </a>
              <a className="btn btn-secondary" href={`/v1/analytics/reports/${encodeURIComponent(r.id)}/export.parquet`} download>
                Download Parquet
              </a>
            </>
          )
        }
      />
      <div className="grid grid-1-2">
        <Card title="Details">
          <KeyValue
            items={[
              ['Status', <StatusBadge key="s" status={r.status} />],
              [
                'Source',
                typeof r.query.sourceId === 'string' ? (
                  <Link key="src" to={`/sources/${r.query.sourceId}`}>
                    {sourceName(r.query.sourceId)}
                  </Link>
                ) : (
                  '—'
                ),
              ],
              ['Rows', r.totalRows !== null && r.totalRows !== r.rowCount ? `${formatNumber(r.rowCount)} of ${formatNumber(r.totalRows)}` : formatNumber(r.rowCount)],
              ['Duration', formatMs(r.durationMs)],
              ['Created', formatDate(r.createdAt)],
              ['Completed', formatDate(r.completedAt)],
              ['ID', <code key="id">{r.id}</code>],
            ]}
          />
          <details className="query-json">
            <summary>Query (JSON)</summary>
            <pre className="code-block">
              <code>{json}</code>
            </pre>
            <CopyButton value={json} label="Copy JSON" size="sm" />
          </details>
        </Card>
        <Card title="Result" actions={<Badge>{formatNumber(r.rowCount)} rows</Badge>}>
          {r.status === 'running' ? (
            <Loading label="The query is still running…" rows={5} />
          ) : r.status === 'failed' ? (
            <Alert tone="error" title="The query failed">
              <p>{r.error}</p>
            </Alert>
          ) : (
            <ResultView report={r} />
          )}
        </Card>
      </div>
    </>
  );
}
