import { PLAN_LIMITS, type AccountDto, type Overview, type Plan } from '../api/types.ts';
import { unwrap } from '../api/client.ts';
import { Badge, Card, ErrorBanner, KeyValue, Loading, PageHeader } from '../components/ui.tsx';
import { CurrentMinute, RequestsPerDay, UsageBreakdown } from '../components/usage.tsx';
import { formatDate, formatInt } from '../format.ts';
import { useDocumentTitle, useResource } from '../hooks.ts';

const PLAN_COPY: Record<Plan, { name: string; text: string }> = {
  starter: { name: 'Starter', text: 'For trying things out and small projects.' },
  professional: { name: 'Professional', text: 'For production workloads and teams.' },
  enterprise: { name: 'Enterprise', text: 'For high volume, with priority support.' },
};

export function PlanPage() {
  useDocumentTitle('Plan & usage');
  const account = useResource<AccountDto>('account', (api, signal) => unwrap(api.openapi.GET('/account', { signal })));
  const overview = useResource<Overview>('overview', (api, signal) => unwrap(api.openapi.GET('/analytics/overview', { signal })));
  const a = account.data;

  return (
    <>
      <PageHeader
        eyebrow="Settings"
        title="Plan & usage"
        description="Your plan's rate limit, how much of it you are using right now, your traffic over the last 30 days, and your calls by API key and by operation."
      />
      <ErrorBanner error={account.error} onRetry={() => void account.reload()} />
      <div className="grid grid-2">
        <Card title="Your plan">
          {!a ? (
            <Loading rows={3} />
          ) : (
            <div className="plan-current" data-testid="plan">
              <p className="plan-name">
                {PLAN_COPY[a.plan].name} <Badge tone="accent">current</Badge>
              </p>
              <p className="plan-limit">
                <span className="big-number">{formatInt(a.rateLimitPerMinute)}</span> requests per minute
              </p>
              <KeyValue
                items={[
                  ['Account', a.name],
                  ['Account ID', <code key="id">{a.id}</code>],
                  ['Member since', formatDate(a.createdAt, false)],
                  ['Counted', 'per account, across all keys and the dashboard'],
                ]}
              />
            </div>
          )}
        </Card>
        <Card title="This minute">
          <CurrentMinute refreshMs={3_000} />
          <p className="muted small">
            A request over the limit is answered <code>429 Too Many Requests</code> with a <code>Retry-After</code> header. Every response carries <code>RateLimit</code> and{' '}
            <code>X-RateLimit-Remaining</code> headers.
          </p>
        </Card>
      </div>
      <Card title="Requests per day">
        <ErrorBanner error={overview.error} onRetry={() => void overview.reload()} />
        <RequestsPerDay overview={overview.data} />
        <p className="muted small">Calls made with your API keys; the dashboard&apos;s own calls are not counted here.</p>
      </Card>
      <Card title="Calls by key and operation">
        <UsageBreakdown />
      </Card>
      <Card title="Plans">
        <div className="plans">
          {(Object.keys(PLAN_LIMITS) as Plan[]).map((p) => (
            <div key={p} className={`plan-tile${a?.plan === p ? ' is-current' : ''}`}>
              <p className="plan-tile-name">
                {PLAN_COPY[p].name} {a?.plan === p && <Badge tone="accent">current</Badge>}
              </p>
              <p className="plan-tile-limit">
                <span className="big-number">{formatInt(PLAN_LIMITS[p])}</span> req/min
              </p>
              <p className="muted small">{PLAN_COPY[p].text}</p>
            </div>
          ))}
        </div>
        <p className="muted small">To change your plan, contact us; the new limit applies at once to every key.</p>
      </Card>
    </>
  );
}
