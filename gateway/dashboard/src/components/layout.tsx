import { useEffect, useRef, useState, type ReactNode } from 'react';
import { useSession } from '../context.tsx';
import { Link, useLocation } from '../router.tsx';
import { Badge } from './ui.tsx';

interface NavItem {
  to: string;
  label: string;
  icon: ReactNode;
  /** Active for this exact path only (e.g. Explore at /analytics, not /analytics/reports). */
  exact?: boolean;
}

const icon = (d: string) => (
  <svg className="nav-icon" viewBox="0 0 24 24" width="18" height="18" aria-hidden="true" focusable="false">
    <path d={d} fill="none" stroke="currentColor" strokeWidth="1.8" strokeLinecap="round" strokeLinejoin="round" />
  </svg>
);

const NAV: { heading?: string; items: NavItem[] }[] = [
  { items: [{ to: '/', label: 'Overview', icon: icon('M4 13h6V4H4zM14 20h6v-9h-6zM4 20h6v-3H4zM14 7h6V4h-6z'), exact: true }] },
  {
    heading: 'Data',
    items: [
      { to: '/sources', label: 'Sources', icon: icon('M4 6c0-1.7 3.6-3 8-3s8 1.3 8 3-3.6 3-8 3-8-1.3-8-3zM4 6v6c0 1.7 3.6 3 8 3s8-1.3 8-3V6M4 12v6c0 1.7 3.6 3 8 3s8-1.3 8-3v-6') },
    ],
  },
  {
    heading: 'Analytics',
    items: [
      { to: '/analytics', label: 'Explore', icon: icon('M4 20V10M10 20V4M16 20v-7M22 20H2'), exact: true },
      { to: '/analytics/insights', label: 'Insights', icon: icon('M9 18h6M10 21h4M12 3a6 6 0 0 0-3.5 10.9c.6.5 1 1.2 1 2.1h5c0-.9.4-1.6 1-2.1A6 6 0 0 0 12 3z') },
      { to: '/analytics/dashboards', label: 'Dashboards', icon: icon('M3 3h8v10H3zM13 3h8v6h-8zM13 11h8v10h-8zM3 15h8v6H3z') },
      { to: '/analytics/reports', label: 'Reports', icon: icon('M7 3h8l4 4v14H7zM15 3v4h4M10 12h6M10 16h6') },
    ],
  },
  {
    heading: 'Build',
    items: [
      { to: '/models', label: 'Models', icon: icon('M12 3l8 4.5v9L12 21l-8-4.5v-9zM12 12l8-4.5M12 12v9M12 12L4 7.5') },
      { to: '/webhooks', label: 'Webhooks', icon: icon('M10 14a4 4 0 1 1 2-7.5M14 10a4 4 0 1 1-2 7.5M8 17l4-7 4 7') },
    ],
  },
  {
    heading: 'Settings',
    items: [
      { to: '/settings/api-keys', label: 'API Keys', icon: icon('M15 7a4 4 0 1 1-3.9 5H3v3h3v3h3v-3h2.1A4 4 0 0 1 15 7zM16 10h.01') },
      { to: '/settings/account', label: 'Account', icon: icon('M12 12a4 4 0 1 0 0-8 4 4 0 0 0 0 8zM4 21a8 8 0 0 1 16 0') },
      { to: '/settings/plan', label: 'Plan & usage', icon: icon('M3 12a9 9 0 1 0 18 0 9 9 0 0 0-18 0zM12 7v5l3 2') },
    ],
  },
];

export function isActive(item: { to: string; exact?: boolean }, path: string): boolean {
  if (item.exact) return path === item.to;
  return path === item.to || path.startsWith(`${item.to}/`);
}

export function Logo() {
  return (
    <span className="brand">
      <svg viewBox="0 0 32 32" width="28" height="28" aria-hidden="true" focusable="false">
        <rect width="32" height="32" rx="8" className="brand-mark" />
        <path d="M8 22V14M14 22V9M20 22v-6M26 22V12" stroke="#fff" strokeWidth="3" strokeLinecap="round" />
      </svg>
      <span className="brand-name">DAP</span>
    </span>
  );
}

/** The signed-in frame: a sidebar (a drawer on phones), a skip link, and focus moved to each new page. */
export function Layout({ children }: { children: ReactNode }) {
  const { session, logout } = useSession();
  const { path } = useLocation();
  const [open, setOpen] = useState(false);
  const [loggingOut, setLoggingOut] = useState(false);
  const first = useRef(true);
  const menuButton = useRef<HTMLButtonElement>(null);

  useEffect(() => {
    setOpen(false);
    if (first.current) {
      first.current = false;
      return;
    }
    // A new page: move focus to its heading so screen readers announce it.
    const id = window.requestAnimationFrame(() => document.querySelector<HTMLElement>('main h1')?.focus({ preventScroll: true }));
    return () => window.cancelAnimationFrame(id);
  }, [path]);

  useEffect(() => {
    if (!open) return;
    const onKey = (e: KeyboardEvent) => {
      if (e.key === 'Escape') {
        setOpen(false);
        menuButton.current?.focus();
      }
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [open]);

  return (
    <div className="shell">
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <header className="topbar">
        <button
          ref={menuButton}
          type="button"
          className="icon-btn menu-btn"
          aria-expanded={open}
          aria-controls="sidebar"
          aria-label={open ? 'Close menu' : 'Open menu'}
          onClick={() => setOpen((o) => !o)}
        >
          <svg viewBox="0 0 24 24" width="22" height="22" aria-hidden="true" focusable="false">
            <path d={open ? 'M6 6l12 12M18 6L6 18' : 'M4 7h16M4 12h16M4 17h16'} stroke="currentColor" strokeWidth="2" strokeLinecap="round" />
          </svg>
        </button>
        <Link to="/" className="topbar-brand" aria-label="DAP dashboard home">
          <Logo />
        </Link>
        <span className="topbar-account">{session.account.name}</span>
      </header>
      {open && <div className="scrim" aria-hidden="true" onClick={() => setOpen(false)} />}
      <aside id="sidebar" className={`sidebar${open ? ' is-open' : ''}`}>
        <div className="sidebar-inner">
          <Link to="/" className="sidebar-brand" aria-label="DAP dashboard home">
            <Logo />
          </Link>
          <nav aria-label="Main" className="nav">
            {NAV.map((group, gi) => (
              <div key={gi} className="nav-group">
                {group.heading && <p className="nav-heading">{group.heading}</p>}
                <ul>
                  {group.items.map((item) => {
                    const active = isActive(item, path);
                    return (
                      <li key={item.to}>
                        <Link to={item.to} className={`nav-link${active ? ' is-active' : ''}`} aria-current={active ? 'page' : undefined}>
                          {item.icon}
                          {item.label}
                        </Link>
                      </li>
                    );
                  })}
                </ul>
              </div>
            ))}
          </nav>
          <div className="sidebar-footer">
            <div className="account-chip">
              <span className="avatar" aria-hidden="true">
                {session.account.name.slice(0, 1).toUpperCase()}
              </span>
              <span className="account-text">
                <span className="account-name">{session.account.name}</span>
                <span className="account-email">{session.user.email}</span>
              </span>
            </div>
            <div className="sidebar-row">
              <Badge tone="accent">{session.account.plan} plan</Badge>
              <a className="muted-link" href="/docs" target="_blank" rel="noopener">
                API docs ↗
              </a>
            </div>
            <button
              type="button"
              className="btn btn-ghost btn-block"
              disabled={loggingOut}
              onClick={async () => {
                setLoggingOut(true);
                try {
                  await logout();
                } finally {
                  setLoggingOut(false);
                }
              }}
            >
              {loggingOut ? 'Logging out…' : 'Log out'}
            </button>
          </div>
        </div>
      </aside>
      <main id="main" className="main" tabIndex={-1}>
        {children}
      </main>
    </div>
  );
}
