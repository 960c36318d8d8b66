import { useEffect, useId, useRef, useState, type ButtonHTMLAttributes, type ReactNode } from 'react';
import type { ApiError } from '../api/client.ts';
import { Link } from '../router.tsx';

type ButtonVariant = 'primary' | 'secondary' | 'danger' | 'ghost';

export function Button({
  variant = 'secondary',
  size,
  loading = false,
  type = 'button',
  disabled,
  children,
  className = '',
  ...rest
}: ButtonHTMLAttributes<HTMLButtonElement> & { variant?: ButtonVariant; size?: 'sm'; loading?: boolean }) {
  return (
    <button type={type} className={`btn btn-${variant}${size ? ` btn-${size}` : ''} ${className}`.trim()} disabled={disabled || loading} aria-busy={loading || undefined} {...rest}>
      {loading && <span className="spinner spinner-inline" aria-hidden="true" />}
      {children}
    </button>
  );
}

export function ButtonLink({ to, variant = 'secondary', size, children }: { to: string; variant?: ButtonVariant; size?: 'sm'; children: ReactNode }) {
  return (
    <Link to={to} className={`btn btn-${variant}${size ? ` btn-${size}` : ''}`}>
      {children}
    </Link>
  );
}

export interface FieldControlProps {
  id: string;
  'aria-describedby'?: string;
  'aria-invalid'?: true;
  required?: boolean;
}

/** A label, the control, a hint and the field's error, wired together for screen readers. */
export function Field({
  label,
  hint,
  error,
  required,
  className = '',
  children,
}: {
  label: ReactNode;
  hint?: ReactNode;
  error?: string | undefined;
  required?: boolean;
  className?: string;
  children: (props: FieldControlProps) => ReactNode;
}) {
  const id = useId();
  const hintId = `${id}-hint`;
  const errorId = `${id}-error`;
  const describedBy = [hint ? hintId : null, error ? errorId : null].filter(Boolean).join(' ');
  return (
    <div className={`field ${error ? 'field-invalid' : ''} ${className}`.trim()}>
      <label htmlFor={id} className="field-label">
        {label}
        {required && (
          <span className="required" aria-hidden="true">
            {' '}
            *
          </span>
        )}
      </label>
      {children({
        id,
        ...(describedBy ? { 'aria-describedby': describedBy } : {}),
        ...(error ? { 'aria-invalid': true as const } : {}),
        ...(required ? { required } : {}),
      })}
      {hint && (
        <p id={hintId} className="field-hint">
          {hint}
        </p>
      )}
      {error && (
        <p id={errorId} className="field-error">
          <span aria-hidden="true">⚠ </span>
          {error}
        </p>
      )}
    </div>
  );
}

/** An API error as a readable alert: what happened, what to do, and the request id for support. */
export function ErrorBanner({
  error,
  title,
  onRetry,
  fields,
}: {
  error: ApiError | null | undefined;
  title?: string | undefined;
  onRetry?: (() => void) | undefined;
  /** The paths a form shows beside its own fields: the banner lists only the others, and stays away if none is left. */
  fields?: readonly string[] | undefined;
}) {
  if (!error) return null;
  const elsewhere = error.fieldErrors.filter((e) => !fields?.some((f) => e.path === f || e.path.startsWith(`${f}.`)));
  if (fields && error.fieldErrors.length > 0 && elsewhere.length === 0) return null;
  const retry = error.status === 429 && error.retryAfterSeconds ? ` You can retry in ${error.retryAfterSeconds} s.` : '';
  return (
    <div className="alert alert-error" role="alert">
      <div className="alert-body">
        <p className="alert-title">{title ?? error.title}</p>
        {error.detail && error.detail !== error.title && (
          <p>
            {error.detail}
            {retry}
          </p>
        )}
        {elsewhere.length > 0 && (
          <ul className="alert-list">
            {elsewhere.map((e) => (
              <li key={`${e.path}:${e.message}`}>
                {e.path && <code>{e.path}</code>} {e.message}
              </li>
            ))}
          </ul>
        )}
        {error.requestId && (
          <p className="alert-meta">
            Request ID: <code>{error.requestId}</code>
          </p>
        )}
      </div>
      {onRetry && (
        <Button size="sm" onClick={onRetry}>
          Try again
        </Button>
      )}
    </div>
  );
}

export function Alert({ tone = 'info', title, children }: { tone?: 'info' | 'warning' | 'success' | 'error'; title?: ReactNode; children?: ReactNode }) {
  return (
    <div className={`alert alert-${tone}`} role={tone === 'error' ? 'alert' : undefined}>
      <div className="alert-body">
        {title && <p className="alert-title">{title}</p>}
        {children}
      </div>
    </div>
  );
}

export function PageHeader({
  title,
  status,
  description,
  actions,
  back,
  eyebrow,
}: {
  title: ReactNode;
  /** A status shown as a badge beside the title (a source's, a model's). */
  status?: string;
  description?: ReactNode;
  actions?: ReactNode;
  back?: { to: string; label: string };
  eyebrow?: string;
}) {
  return (
    <header className="page-header">
      <div className="page-header-text">
        {back && (
          <Link to={back.to} className="back-link">
            ← {back.label}
          </Link>
        )}
        {eyebrow && <p className="eyebrow">{eyebrow}</p>}
        <h1 tabIndex={-1} className="page-title">
          {status ? (
            <span className="title-with-badge">
              {title} <StatusBadge status={status} />
            </span>
          ) : (
            title
          )}
        </h1>
        {description && <p className="page-description">{description}</p>}
      </div>
      {actions && <div className="page-actions">{actions}</div>}
    </header>
  );
}

export function Card({
  title,
  actions,
  children,
  className = '',
  footer,
}: {
  title?: ReactNode;
  actions?: ReactNode;
  children: ReactNode;
  className?: string;
  footer?: ReactNode;
}) {
  const id = useId();
  return (
    <section className={`card ${className}`.trim()} aria-labelledby={title ? id : undefined}>
      {(title || actions) && (
        <div className="card-header">
          {title && (
            <h2 className="card-title" id={id}>
              {title}
            </h2>
          )}
          {actions && <div className="card-actions">{actions}</div>}
        </div>
      )}
      <div className="card-body">{children}</div>
      {footer && <div className="card-footer">{footer}</div>}
    </section>
  );
}

export type BadgeTone = 'neutral' | 'success' | 'warning' | 'danger' | 'info' | 'accent';

export function Badge({ tone = 'neutral', children, dot = false }: { tone?: BadgeTone; children: ReactNode; dot?: boolean }) {
  return (
    <span className={`badge badge-${tone}`}>
      {dot && <span className="badge-dot" aria-hidden="true" />}
      {children}
    </span>
  );
}

/** Values as a row of badges, or one accent badge saying `allLabel` when they stand for every value. */
export function BadgeList({ items, all, allLabel }: { items: readonly string[]; all: boolean; allLabel: string }) {
  if (all) return <Badge tone="accent">{allLabel}</Badge>;
  return (
    <span className="badge-list">
      {items.map((item) => (
        <Badge key={item}>{item}</Badge>
      ))}
    </span>
  );
}

const STATUS_TONES: Record<string, BadgeTone> = {
  ready: 'success',
  completed: 'success',
  succeeded: 'success',
  enabled: 'success',
  active: 'success',
  pending: 'warning',
  replaced: 'warning',
  syncing: 'info',
  running: 'info',
  training: 'info',
  failed: 'danger',
  revoked: 'neutral',
  expired: 'neutral',
  disabled: 'danger',
  cancelled: 'neutral',
};

export function StatusBadge({ status, label }: { status: string; label?: string }) {
  const tone = STATUS_TONES[status] ?? 'neutral';
  const busy = status === 'pending' || status === 'syncing' || status === 'running' || status === 'training';
  return (
    <span className={`badge badge-${tone}`} data-status={status}>
      {busy ? <span className="spinner spinner-xs" aria-hidden="true" /> : <span className="badge-dot" aria-hidden="true" />}
      {label ?? status.charAt(0).toUpperCase() + status.slice(1)}
    </span>
  );
}

export function Spinner({ label = 'Loading' }: { label?: string }) {
  return (
    <span className="spinner" role="img" aria-label={label}>
      <span className="visually-hidden">{label}</span>
    </span>
  );
}

/** A loading placeholder announced to screen readers. */
export function Loading({ label = 'Loading…', rows = 3 }: { label?: string; rows?: number }) {
  return (
    <div className="loading" role="status" aria-live="polite">
      <span className="visually-hidden">{label}</span>
      {Array.from({ length: rows }, (_, i) => (
        <div key={i} className="skeleton" aria-hidden="true" />
      ))}
    </div>
  );
}

/** Until a resource has data: a skeleton while it loads, or the load's error with a retry. */
export function NotLoaded({ resource, rows = 3 }: { resource: { error: ApiError | null; reload: () => unknown }; rows?: number }) {
  return resource.error ? <ErrorBanner error={resource.error} onRetry={() => void resource.reload()} /> : <Loading rows={rows} />;
}

/** A detail page before its resource arrives: its header, then NotLoaded. */
export function PageNotLoaded({
  title,
  back,
  resource,
  rows = 5,
}: {
  title: string;
  back: { to: string; label: string };
  resource: { error: ApiError | null; reload: () => unknown };
  rows?: number;
}) {
  return (
    <>
      <PageHeader title={title} back={back} />
      <NotLoaded resource={resource} rows={rows} />
    </>
  );
}

export function EmptyState({ title, children, action, icon = '◌' }: { title: string; children?: ReactNode; action?: ReactNode; icon?: ReactNode }) {
  return (
    <div className="empty">
      <div className="empty-icon" aria-hidden="true">
        {icon}
      </div>
      <p className="empty-title">{title}</p>
      {children && <div className="empty-text">{children}</div>}
      {action && <div className="empty-action">{action}</div>}
    </div>
  );
}

const CopyIcon = () => (
  <svg viewBox="0 0 24 24" width="15" height="15" aria-hidden="true" focusable="false">
    <rect x="9" y="9" width="11" height="11" rx="2" fill="none" stroke="currentColor" strokeWidth="2" />
    <path d="M5 15V6a2 2 0 0 1 2-2h9" fill="none" stroke="currentColor" strokeWidth="2" strokeLinecap="round" />
  </svg>
);

const CheckIcon = () => (
  <svg viewBox="0 0 24 24" width="15" height="15" aria-hidden="true" focusable="false">
    <path d="M5 12.5l4.5 4.5L19 7.5" fill="none" stroke="currentColor" strokeWidth="2.4" strokeLinecap="round" strokeLinejoin="round" />
  </svg>
);

/** Copies text; falls back to a selected textarea where the Clipboard API is unavailable. */
export async function copyText(text: string): Promise<boolean> {
  try {
    if (navigator.clipboard && window.isSecureContext) {
      await navigator.clipboard.writeText(text);
      return true;
    }
  } catch {
    // fall through to the legacy path
  }
  const area = document.createElement('textarea');
  area.value = text;
  area.setAttribute('readonly', '');
  area.className = 'offscreen';
  document.body.appendChild(area);
  area.select();
  let ok: boolean;
  try {
    ok = document.execCommand('copy');
  } catch {
    ok = false;
  }
  area.remove();
  return ok;
}

export function CopyButton({ value, label = 'Copy', size }: { value: string; label?: string; size?: 'sm' }) {
  const [state, setState] = useState<'idle' | 'copied' | 'failed'>('idle');
  useEffect(() => {
    if (state === 'idle') return;
    const t = window.setTimeout(() => setState('idle'), 2_500);
    return () => window.clearTimeout(t);
  }, [state]);
  return (
    <>
      <Button size={size} onClick={async () => setState((await copyText(value)) ? 'copied' : 'failed')} data-copied={state === 'copied' || undefined}>
        {state === 'copied' ? <CheckIcon /> : <CopyIcon />} {state === 'copied' ? 'Copied' : state === 'failed' ? 'Select and copy' : label}
      </Button>
      <span className="visually-hidden" role="status" aria-live="polite">
        {state === 'copied' ? 'Copied to the clipboard' : state === 'failed' ? 'Copying failed; select the text and copy it' : ''}
      </span>
    </>
  );
}

/** A secret shown exactly once: a read-only field, a copy button and a clear warning. */
export function SecretReveal({ secret, label, warning }: { secret: string; label: string; warning: ReactNode }) {
  const id = useId();
  return (
    <div className="secret">
      <Alert tone="warning" title="Copy it now: you will not see it again">
        <p>{warning}</p>
      </Alert>
      <p id={id} className="field-label">
        {label}
      </p>
      <div className="secret-row">
        <code className="secret-value" aria-labelledby={id} data-testid="secret" tabIndex={0}>
          {secret}
        </code>
        <CopyButton value={secret} />
      </div>
    </div>
  );
}

/**
 * A modal on the native <dialog>: the browser traps focus, Escape closes it (unless `dismissible` is
 * false, for dialogs that show a secret, or it is `busy` with a request whose answer it must show), and
 * focus returns to where it was.
 */
export function Dialog({
  open,
  onClose,
  title,
  description,
  children,
  dismissible = true,
  busy = false,
  wide = false,
  drawer = false,
}: {
  open: boolean;
  onClose: () => void;
  title: ReactNode;
  description?: ReactNode;
  children: ReactNode;
  dismissible?: boolean;
  busy?: boolean;
  wide?: boolean;
  /** A full-height panel at the right edge (the whole screen on a phone), for detail beside a list. */
  drawer?: boolean;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  const id = useId();
  useEffect(() => {
    const d = ref.current;
    if (!d) return;
    if (open && !d.open) d.showModal();
    if (!open && d.open) d.close();
  }, [open]);
  return (
    <dialog
      ref={ref}
      className={`dialog${wide ? ' dialog-wide' : ''}${drawer ? ' dialog-drawer' : ''}`}
      aria-labelledby={`${id}-title`}
      aria-describedby={description ? `${id}-desc` : undefined}
      aria-busy={busy || undefined}
      onCancel={(e) => {
        e.preventDefault();
        if (dismissible && !busy) onClose();
      }}
    >
      {open && (
        <div className="dialog-inner">
          <div className="dialog-header">
            <h2 id={`${id}-title`} className="dialog-title">
              {title}
            </h2>
            {dismissible && (
              <button type="button" className="icon-btn" aria-label="Close" onClick={onClose} disabled={busy}>
                ×
              </button>
            )}
          </div>
          {description && (
            <p id={`${id}-desc`} className="dialog-description">
              {description}
            </p>
          )}
          {children}
        </div>
      )}
    </dialog>
  );
}

/** A dialog's buttons: Cancel (unusable while its request runs), then the dialog's own. */
export function DialogFooter({ onCancel, cancelLabel = 'Cancel', busy = false, children }: { onCancel?: () => void; cancelLabel?: string; busy?: boolean; children?: ReactNode }) {
  return (
    <div className="dialog-footer">
      {onCancel && (
        <Button onClick={onCancel} disabled={busy}>
          {cancelLabel}
        </Button>
      )}
      {children}
    </div>
  );
}

/** What a form needs to submit and to show how that went; `fields` are the paths its fields show themselves. */
export interface FormProps {
  onSubmit: () => unknown;
  pending: boolean;
  error: ApiError | null;
  /** The banner's title in place of the API's. */
  errorTitle?: string | undefined;
  fields?: readonly string[];
}

/**
 * A form: the API's error above the fields (only what no field shows), the fields, then `actions` (its
 * buttons). It sends nothing twice: a submit while `pending` is ignored.
 */
export function Form({ onSubmit, pending, error, errorTitle, fields = [], label, actions, children }: FormProps & { label?: string; actions: ReactNode; children?: ReactNode }) {
  return (
    <form
      className="form"
      noValidate
      aria-label={label}
      onSubmit={(e) => {
        e.preventDefault();
        if (!pending) void onSubmit();
      }}
    >
      <ErrorBanner error={error} title={errorTitle} fields={fields} />
      {children}
      {actions}
    </form>
  );
}

/** A dialog around one form, with Cancel beside the submit button, which spins while `pending`. */
export function FormDialog({
  open,
  onClose,
  title,
  description,
  wide,
  submitLabel,
  submitVariant = 'primary',
  submitDisabled = false,
  cancelLabel,
  children,
  ...form
}: FormProps & {
  open: boolean;
  onClose: () => void;
  title: ReactNode;
  description?: ReactNode;
  wide?: boolean;
  submitLabel: ReactNode;
  submitVariant?: ButtonVariant;
  submitDisabled?: boolean;
  cancelLabel?: string;
  children?: ReactNode;
}) {
  return (
    <Dialog open={open} onClose={onClose} title={title} description={description} wide={wide} busy={form.pending}>
      <Form
        {...form}
        actions={
          <DialogFooter onCancel={onClose} cancelLabel={cancelLabel} busy={form.pending}>
            <Button type="submit" variant={submitVariant} loading={form.pending} disabled={submitDisabled}>
              {submitLabel}
            </Button>
          </DialogFooter>
        }
      >
        {children}
      </Form>
    </Dialog>
  );
}

/** Asks before a destructive action; shows the API's error in place if the action fails. */
export function ConfirmDialog({
  open,
  title,
  children,
  confirmLabel,
  onConfirm,
  onClose,
  pending,
  error,
}: {
  open: boolean;
  title: string;
  children: ReactNode;
  confirmLabel: string;
  onConfirm: () => void;
  onClose: () => void;
  pending: boolean;
  error: ApiError | null;
}) {
  return (
    <FormDialog open={open} onClose={onClose} title={title} onSubmit={onConfirm} submitLabel={confirmLabel} submitVariant="danger" pending={pending} error={error}>
      <div className="dialog-body">{children}</div>
    </FormDialog>
  );
}

/** A secret shown once: neither Escape nor × closes it, only saying it was saved. */
export function SecretDialog({
  open,
  onDone,
  title,
  label,
  secret,
  warning,
  children,
}: {
  open: boolean;
  onDone: () => void;
  title: ReactNode;
  label: string;
  secret: string;
  warning: ReactNode;
  children?: ReactNode;
}) {
  return (
    <Dialog open={open} onClose={onDone} title={title} dismissible={false}>
      <SecretReveal label={label} secret={secret} warning={warning} />
      {children}
      <DialogFooter>
        <Button variant="primary" onClick={onDone}>
          I have saved it
        </Button>
      </DialogFooter>
    </Dialog>
  );
}

/**
 * A list's body: a skeleton while it first loads, `empty` once it holds nothing, else `children`. After a
 * failed load it shows nothing, as the page's error banner says what happened (an empty state would be false).
 */
export function ListBody({
  state,
  count,
  rows = 3,
  empty,
  children,
}: {
  state: { data: unknown; error: unknown };
  count: number;
  rows?: number;
  empty: ReactNode;
  children: ReactNode;
}) {
  if (!state.data) return state.error ? null : <Loading rows={rows} />;
  return <>{count === 0 ? empty : children}</>;
}

export interface Column<T> {
  /** The header, also the cell's label where a phone stacks the table. */
  header: string;
  /** A header for screen readers only (the row's buttons), and no label on the phone. */
  hiddenHeader?: boolean;
  numeric?: boolean;
  className?: string;
  cell: (row: T) => ReactNode;
}

/** A list as a table, stacked into labelled cards on a phone. */
export function DataTable<T>({
  label,
  columns,
  rows,
  rowKey,
  rowData,
  testId,
}: {
  label: string;
  testId?: string;
  columns: readonly Column<T>[];
  rows: readonly T[];
  rowKey: (row: T) => string;
  /** data-* attributes of a row, for tests and styles. */
  rowData?: (row: T) => Record<`data-${string}`, string>;
}) {
  const cls = (c: Column<T>) => [c.numeric ? 'num' : '', c.className ?? ''].join(' ').trim() || undefined;
  return (
    <table className="table table-responsive" aria-label={label} data-testid={testId}>
      <thead>
        <tr>
          {columns.map((c) => (
            <th key={c.header} scope="col" className={c.numeric ? 'num' : undefined}>
              {c.hiddenHeader ? <span className="visually-hidden">{c.header}</span> : c.header}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>
        {rows.map((r) => (
          <tr key={rowKey(r)} {...rowData?.(r)}>
            {columns.map((c) => (
              <td key={c.header} data-label={c.hiddenHeader ? undefined : c.header} className={cls(c)}>
                {c.cell(r)}
              </td>
            ))}
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** A horizontally scrollable region for wide tables, reachable by keyboard. */
export function TableWrap({ label, children }: { label: string; children: ReactNode }) {
  return (
    <div className="table-wrap" role="region" aria-label={label} tabIndex={0}>
      {children}
    </div>
  );
}

export function Stat({ label, value, hint, to }: { label: string; value: ReactNode; hint?: ReactNode; to?: string }) {
  const body = (
    <>
      <span className="stat-label">{label}</span>
      <span className="stat-value">{value}</span>
      {hint && <span className="stat-hint">{hint}</span>}
    </>
  );
  return to ? (
    <Link to={to} className="stat stat-link">
      {body}
    </Link>
  ) : (
    <div className="stat">{body}</div>
  );
}

export function KeyValue({ items }: { items: [string, ReactNode][] }) {
  return (
    <dl className="kv">
      {items.map(([k, v]) => (
        <div key={k} className="kv-row">
          <dt>{k}</dt>
          <dd>{v}</dd>
        </div>
      ))}
    </dl>
  );
}
