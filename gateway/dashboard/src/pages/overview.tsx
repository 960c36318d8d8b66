import type { ApiKeyDto, Overview, Page } from '../api/types.ts';
import { unwrap } from '../api/client.ts';
import { Card, ErrorBanner, Loading, Stat, Badge } from '../components/ui.tsx';
import { CurrentMinute, RequestsPerDay } from '../components/usage.tsx';
import { useSession } from '../context.tsx';
import { formatCompact, formatRelative } from '../format.ts';
import { useDocumentTitle, useResource } from '../hooks.ts';
import { NameOf, kindOf, useNames } from '../names.tsx';
import { Link } from '../router.tsx';
import { PageHeader } from '../components/ui.tsx';

const ACTIVITY_LABELS: Record<string, string> = {
  'source.created': 'Source connected',
  'source.ready': 'Source ready',
  'source.failed': 'Source failed',
  'source.deleted': 'Source deleted',
  'report.completed': 'Report completed',
  'report.failed': 'Report failed',
  'model.ready': 'Model ready',
  'model.failed': 'Model failed',
  'prediction.completed': 'Prediction',
  'webhook.created': 'Webhook added',
  'webhook.deleted': 'Webhook removed',
  'webhook.test': 'Test event',
};

function GettingStarted({ hasKey, hasSource, hasReport }: { hasKey: boolean; hasSource: boolean; hasReport: boolean }) {
  const steps = [
    { done: hasKey, to: '/settings/api-keys', title: 'Create an API key', text: 'Call the API from your code with a Bearer key.' },
    { done: hasSource, to: '/sources/new', title: 'Connect a data source', text: 'Paste rows, upload a CSV or JSON file.' },
    { done: hasReport, to: '/analytics', title: 'Ask a question', text: 'Group, filter and chart your data.' },
  ];
  if (steps.every((s) => s.done)) return null;
  return (
    <Card title="Get started" className="card-accent">
      <ol className="steps">
        {steps.map((s, i) => (
          <li key={s.to} className={s.done ? 'is-done' : ''}>
            <span className="step-mark" aria-hidden="true">
              {s.done ? '✓' : i + 1}
            </span>
            <span className="step-text">
              <Link to={s.to} className="step-title">
                {s.title}
              </Link>
              <span className="step-desc">{s.done ? 'Done' : s.text}</span>
            </span>
          </li>
        ))}
      </ol>
    </Card>
  );
}

export function OverviewPage() {
  useDocumentTitle('Overview');
  const { session } = useSession();
  const overview = useResource<Overview>('overview', (api, signal) => unwrap(api.openapi.GET('/analytics/overview', { signal })));
  const keys = useResource<Page<ApiKeyDto>>('keys', (api, signal) => unwrap(api.openapi.GET('/keys', { params: { query: { limit: 100 } }, signal })));
  const o = overview.data;
  const counts = o?.counts;
  const names = useNames(o?.recentActivity.map((a) => a.subject) ?? []);
  const activeKeys = keys.data?.data.filter((k) => !k.revokedAt && (!k.expiresAt || new Date(k.expiresAt) > new Date())).length;

  return (
    <>
      <PageHeader title={`Welcome, ${session.account.name}`} description="What is happening in your account today." />
      {o && keys.data && <GettingStarted hasKey={(activeKeys ?? 0) > 0} hasSource={(counts?.sources ?? 0) > 0} hasReport={(counts?.reports ?? 0) > 0} />}
      <ErrorBanner error={overview.error} onRetry={() => void overview.reload()} />
      <section aria-label="Totals" className="stats">
        {counts ? (
          <>
            <Stat label="Sources" value={formatCompact(counts.sources)} hint={`${formatCompact(counts.rows)} rows`} to="/sources" />
            <Stat label="Reports" value={formatCompact(counts.reports)} to="/analytics/reports" />
            <Stat
              label="Models"
              value={formatCompact(counts.models)}
              hint={`${formatCompact(counts.predictions)} ${counts.predictions === 1 ? 'prediction' : 'predictions'}`}
              to="/models"
            />
            <Stat label="Webhooks" value={formatCompact(counts.webhooks)} to="/webhooks" />
            <Stat label="API keys" value={activeKeys === undefined ? '…' : formatCompact(activeKeys)} hint="active" to="/settings/api-keys" />
          </>
        ) : (
          !overview.error && <Loading rows={1} />
        )}
      </section>
      <div className="grid grid-2-1">
        <Card
          title="API requests"
          actions={
            <Link to="/settings/plan" className="muted-link">
              Plan & usage →
            </Link>
          }
        >
          <RequestsPerDay overview={o} />
        </Card>
        <Card title="This minute">
          <CurrentMinute />
        </Card>
      </div>
      <Card title="Recent activity">
        {!o ? (
          <Loading rows={3} />
        ) : o.recentActivity.length === 0 ? (
          <p className="muted">Nothing yet. Connect a source or send a test webhook and it shows up here.</p>
        ) : (
          <ul className="activity">
            {o.recentActivity.map((a) => {
              const failed = a.type.endsWith('.failed');
              return (
                <li key={a.id}>
                  <Badge tone={failed ? 'danger' : a.type.endsWith('.ready') || a.type.endsWith('.completed') ? 'success' : 'neutral'}>{ACTIVITY_LABELS[a.type] ?? a.type}</Badge>
                  {/* Predictions have no page or name of their own: the label says it all. */}
                  {kindOf(a.subject) ? <NameOf id={a.subject} named={names(a.subject)} className="activity-subject" /> : <span className="activity-subject" />}
                  <time dateTime={a.occurredAt} className="muted activity-time">
                    {formatRelative(a.occurredAt)}
                  </time>
                </li>
              );
            })}
          </ul>
        )}
      </Card>
    </>
  );
}
