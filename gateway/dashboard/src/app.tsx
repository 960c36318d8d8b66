import { DashboardPage, DashboardsPage } from './pages/dashboards.tsx';
import { InsightsPage } from './pages/insights.tsx';
import { useCallback, useEffect, useMemo, useState, type ReactNode } from 'react';
import { createApiClient, unwrap } from './api/client.ts';
import type { SessionDto } from './api/types.ts';
import { Layout } from './components/layout.tsx';
import { Spinner } from './components/ui.tsx';
import { ApiContext, SessionContext, ToastProvider } from './context.tsx';
import { matchPath, navigate, useLocation } from './router.tsx';
import { LoginPage, ResetPasswordPage, SignupPage } from './pages/auth.tsx';
import { AccountPage } from './pages/account.tsx';
import { OverviewPage } from './pages/overview.tsx';
import { ApiKeysPage } from './pages/api-keys.tsx';
import { PlanPage } from './pages/plan.tsx';
import { SourcesPage } from './pages/sources.tsx';
import { ConnectSourcePage } from './pages/connect-source.tsx';
import { SourceDetailPage } from './pages/source-detail.tsx';
import { ExplorePage } from './pages/explore.tsx';
import { ReportsPage, ReportDetailPage } from './pages/reports.tsx';
import { ModelsPage, ModelDetailPage } from './pages/models.tsx';
import { TrainModelPage } from './pages/train-model.tsx';
import { WebhooksPage, WebhookDetailPage } from './pages/webhooks.tsx';
import { NotFoundPage } from './pages/not-found.tsx';
import { EventCatalogPage } from './pages/event-catalog.tsx';

type Route = { pattern: string; render: (params: Record<string, string>) => ReactNode };

const ROUTES: Route[] = [
  { pattern: '/', render: () => <OverviewPage /> },
  { pattern: '/sources', render: () => <SourcesPage /> },
  { pattern: '/sources/new', render: () => <ConnectSourcePage /> },
  { pattern: '/sources/:id', render: (p) => <SourceDetailPage id={p.id!} /> },
  { pattern: '/analytics', render: () => <ExplorePage /> },
  { pattern: '/analytics/reports', render: () => <ReportsPage /> },
  { pattern: '/analytics/reports/:id', render: (p) => <ReportDetailPage id={p.id!} /> },
  { pattern: '/analytics/insights', render: () => <InsightsPage /> },
  { pattern: '/analytics/dashboards', render: () => <DashboardsPage /> },
  { pattern: '/analytics/dashboards/:id', render: (p) => <DashboardPage id={p.id!} /> },
  { pattern: '/models', render: () => <ModelsPage /> },
  { pattern: '/models/new', render: () => <TrainModelPage /> },
  { pattern: '/models/:id', render: (p) => <ModelDetailPage id={p.id!} /> },
  { pattern: '/webhooks', render: () => <WebhooksPage /> },
  { pattern: '/webhooks/events', render: () => <EventCatalogPage /> },
  { pattern: '/webhooks/:id', render: (p) => <WebhookDetailPage id={p.id!} /> },
  { pattern: '/settings', render: () => <Redirect to="/settings/api-keys" /> },
  { pattern: '/settings/api-keys', render: () => <ApiKeysPage /> },
  { pattern: '/settings/account', render: () => <AccountPage /> },
  { pattern: '/settings/plan', render: () => <PlanPage /> },
];

function Redirect({ to }: { to: string }) {
  useEffect(() => navigate(to, { replace: true }), [to]);
  return null;
}

type AuthState = { status: 'loading' } | { status: 'anonymous'; notice?: string } | { status: 'signed-in'; session: SessionDto };

const PUBLIC_PATHS = new Set(['/login', '/signup']);
/** A reset link works signed in or out; the reset ends every session, so it ends at the login page. */
const RESET_PATH = '/reset-password';

/**
 * The session cookie is HttpOnly, so the app cannot see it. This hint remembers that a session was started
 * here, so a signed-out visitor's page load does not probe /v1/auth/session (a 401 counts as a failed
 * authentication against the visitor's address).
 */
const SESSION_HINT = 'dap.session';
const sessionHint = {
  get: () => {
    try {
      return window.localStorage.getItem(SESSION_HINT) === '1';
    } catch {
      return true;
    }
  },
  set: (on: boolean) => {
    try {
      if (on) window.localStorage.setItem(SESSION_HINT, '1');
      else window.localStorage.removeItem(SESSION_HINT);
    } catch {
      // storage unavailable: the app still works, with one extra probe per load
    }
  },
};

export function App() {
  const [auth, setAuth] = useState<AuthState>(() => (sessionHint.get() ? { status: 'loading' } : { status: 'anonymous' }));
  const { path, href } = useLocation();
  const api = useMemo(
    () =>
      createApiClient({
        onSessionEnded: () => {
          sessionHint.set(false);
          setAuth((s) => (s.status === 'signed-in' ? { status: 'anonymous', notice: 'Your session has ended. Log in again to continue.' } : s));
        },
      }),
    [],
  );

  useEffect(() => {
    if (!sessionHint.get()) return;
    const ctrl = new AbortController();
    unwrap(api.openapi.GET('/auth/session', { signal: ctrl.signal }))
      .then((session) => {
        api.setCsrfToken(session.csrfToken);
        setAuth({ status: 'signed-in', session });
      })
      .catch((err: Error) => {
        if (err.name === 'AbortError') return;
        sessionHint.set(false);
        setAuth({ status: 'anonymous' });
      });
    return () => ctrl.abort();
  }, [api]);

  const signedIn = useCallback(
    (session: SessionDto, next: string | null) => {
      api.setCsrfToken(session.csrfToken);
      sessionHint.set(true);
      setAuth({ status: 'signed-in', session });
      navigate(next && next.startsWith('/') && !next.startsWith('//') ? next : '/', { replace: true });
    },
    [api],
  );

  const logout = useCallback(async () => {
    try {
      await unwrap(api.openapi.POST('/auth/logout'));
    } catch {
      // Ending the session locally is what matters; an ended session is already gone on the server.
    }
    api.setCsrfToken(null);
    sessionHint.set(false);
    setAuth({ status: 'anonymous', notice: 'You have logged out.' });
    navigate('/login', { replace: true });
  }, [api]);

  // Signed out on a private page: go to the login page and come back afterwards.
  useEffect(() => {
    if (path === RESET_PATH) return;
    if (auth.status === 'anonymous' && !PUBLIC_PATHS.has(path)) navigate(`/login?next=${encodeURIComponent(href)}`, { replace: true });
    if (auth.status === 'signed-in' && PUBLIC_PATHS.has(path)) navigate('/', { replace: true });
  }, [auth.status, path, href]);

  const sessionValue = useMemo(() => (auth.status === 'signed-in' ? { session: auth.session, logout } : null), [auth, logout]);

  const passwordReset = useCallback(() => {
    api.setCsrfToken(null);
    sessionHint.set(false);
    setAuth({ status: 'anonymous', notice: 'Your password was changed. Log in with the new one.' });
    navigate('/login', { replace: true });
  }, [api]);

  let content: ReactNode;
  if (path === RESET_PATH) {
    content = <ResetPasswordPage onDone={passwordReset} />;
  } else if (auth.status === 'loading') {
    content = (
      <div className="boot" role="status">
        <Spinner label="Loading the dashboard" />
      </div>
    );
  } else if (auth.status === 'anonymous') {
    content = path === '/signup' ? <SignupPage onSignedIn={signedIn} /> : <LoginPage onSignedIn={signedIn} notice={auth.notice} />;
  } else {
    let page: ReactNode = <NotFoundPage />;
    for (const r of ROUTES) {
      const params = matchPath(r.pattern, path);
      if (params) {
        page = r.render(params);
        break;
      }
    }
    content = (
      <SessionContext.Provider value={sessionValue}>
        <Layout>
          <div key={path} className="page">
            {page}
          </div>
        </Layout>
      </SessionContext.Provider>
    );
  }

  return (
    <ApiContext.Provider value={api}>
      <ToastProvider>{content}</ToastProvider>
    </ApiContext.Provider>
  );
}
