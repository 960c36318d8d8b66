import { useState } from 'react';
import { ApiError, unwrap, type RequestBodyOf } from '../api/client.ts';
import { SCOPES, type ApiKeyCreated, type ApiKeyDto, type Page, type Scope } from '../api/types.ts';
import { Alert, BadgeList, Button, Card, ConfirmDialog, EmptyState, ErrorBanner, Field, FormDialog, ListBody, PageHeader, SecretDialog, StatusBadge } from '../components/ui.tsx';
import { useApi, useNotify } from '../context.tsx';
import { formatDate, formatRelative } from '../format.ts';
import { useAction, useDocumentTitle, useResource } from '../hooks.ts';

const RESOURCES = ['sources', 'analytics', 'models', 'webhooks'] as const;
const RESOURCE_LABELS: Record<(typeof RESOURCES)[number], string> = { sources: 'Sources', analytics: 'Analytics', models: 'Models', webhooks: 'Webhooks' };

const EXPIRY_OPTIONS = [
  { value: 'never', label: 'Never' },
  { value: '7', label: 'In 7 days' },
  { value: '30', label: 'In 30 days' },
  { value: '90', label: 'In 90 days' },
  { value: '365', label: 'In 1 year' },
  { value: 'custom', label: 'On a date…' },
] as const;

const GRACE_OPTIONS = [
  { value: 0, label: 'Immediately' },
  { value: 3600, label: 'After 1 hour' },
  { value: 86_400, label: 'After 24 hours' },
  { value: 7 * 86_400, label: 'After 7 days' },
] as const;

/** The key states whose secret still works. */
const USABLE = new Set(['active', 'pending', 'replaced']);

export function keyState(k: ApiKeyDto, now = Date.now()): { status: string; label: string } {
  if (k.revokedAt) return { status: 'revoked', label: 'Revoked' };
  if (k.expiresAt && new Date(k.expiresAt).getTime() <= now) return { status: 'expired', label: k.replacedBy ? 'Replaced' : 'Expired' };
  // Rolled: it works until its grace period ends, and its replacement is the key to roll from now on.
  if (k.replacedBy) return { status: 'replaced', label: `Replaced, expires at ${formatDate(k.expiresAt)}` };
  if (k.expiresAt && new Date(k.expiresAt).getTime() - now < 7 * 86_400_000) return { status: 'pending', label: `Expires ${formatRelative(k.expiresAt, now)}` };
  return { status: 'active', label: 'Active' };
}

const ScopeList = ({ scopes }: { scopes: Scope[] }) => <BadgeList items={scopes} all={scopes.length === SCOPES.length} allLabel="All scopes" />;

function CurlExample({ secret }: { secret: string }) {
  return (
    <div className="code-block">
      <p className="code-caption">Try it:</p>
      <pre>
        <code>{`curl -H "Authorization: Bearer ${secret}" \\\n  ${window.location.origin}/v1/sources`}</code>
      </pre>
    </div>
  );
}

function CreateKeyDialog({ open, onClose, onCreated }: { open: boolean; onClose: () => void; onCreated: () => void }) {
  const api = useApi();
  const [name, setName] = useState('');
  const [access, setAccess] = useState<'all' | 'restricted'>('all');
  const [scopes, setScopes] = useState<Set<Scope>>(new Set(['sources:read', 'analytics:read']));
  const [expiry, setExpiry] = useState<string>('never');
  const [customDate, setCustomDate] = useState('');
  const [created, setCreated] = useState<ApiKeyCreated | null>(null);
  const create = useAction((body: RequestBodyOf<'/keys'>) => unwrap(api.openapi.POST('/keys', { body })));

  const reset = () => {
    setName('');
    setAccess('all');
    setExpiry('never');
    setCustomDate('');
    setCreated(null);
    create.setError(null);
  };
  const close = () => {
    reset();
    onClose();
  };

  const submit = async () => {
    const local: { path: string; message: string }[] = [];
    if (!name.trim()) local.push({ path: 'name', message: 'Give the key a name you will recognise later' });
    if (access === 'restricted' && scopes.size === 0) local.push({ path: 'scopes', message: 'Choose at least one scope' });
    let expiresAt: string | undefined;
    if (expiry === 'custom') {
      const t = customDate ? new Date(`${customDate}T23:59:59Z`) : null;
      if (!t || Number.isNaN(t.getTime()) || t.getTime() <= Date.now()) local.push({ path: 'expiresAt', message: 'Choose a date in the future' });
      else expiresAt = t.toISOString();
    } else if (expiry !== 'never') {
      expiresAt = new Date(Date.now() + Number(expiry) * 86_400_000).toISOString();
    }
    if (local.length) return create.setError(new ApiError({ status: 400, code: 'validation_failed', title: 'Check the highlighted fields', detail: '', errors: local }));
    const body = { name: name.trim(), ...(access === 'restricted' ? { scopes: SCOPES.filter((s) => scopes.has(s)) } : {}), ...(expiresAt ? { expiresAt } : {}) };
    const key = await create.run(body);
    if (key) {
      setCreated(key);
      onCreated();
    }
  };

  const toggle = (s: Scope) => {
    const next = new Set(scopes);
    if (next.has(s)) next.delete(s);
    else next.add(s);
    setScopes(next);
    create.fixField('scopes', next.size === 0 ? 'Choose at least one scope' : undefined);
  };

  const err = create.error;
  if (created) {
    return (
      <SecretDialog
        open={open}
        onDone={close}
        title={`Key “${created.name}” created`}
        label="Your new API key"
        secret={created.secret}
        warning="We store only a hash of it, so we can never show it again. Keep it in a secret manager or an environment variable, never in source code."
      >
        <CurlExample secret={created.secret} />
      </SecretDialog>
    );
  }
  return (
    <FormDialog
      open={open}
      onClose={close}
      title="Create an API key"
      description="Use the key from your code as a Bearer token. You see its secret once, right after creating it."
      onSubmit={submit}
      submitLabel="Create key"
      pending={create.pending}
      error={err}
      fields={['name', 'scopes', 'expiresAt']}
    >
      <Field label="Name" hint="For example “production backend” or “nightly report job”." error={err?.fieldError('name')} required>
        {(p) => (
          <input
            {...p}
            className="input"
            value={name}
            maxLength={100}
            onChange={(e) => {
              setName(e.target.value);
              create.fixField('name', e.target.value.trim() ? undefined : 'Give the key a name you will recognise later');
            }}
            autoFocus
          />
        )}
      </Field>
      <fieldset className="fieldset">
        <legend className="field-label">Access</legend>
        <div className="radio-cards">
          <label className={`radio-card${access === 'all' ? ' is-checked' : ''}`}>
            <input type="radio" name="access" value="all" checked={access === 'all'} onChange={() => setAccess('all')} />
            <span>
              <span className="radio-title">Full access</span>
              <span className="radio-desc">Every scope, for trusted back-ends.</span>
            </span>
          </label>
          <label className={`radio-card${access === 'restricted' ? ' is-checked' : ''}`}>
            <input type="radio" name="access" value="restricted" checked={access === 'restricted'} onChange={() => setAccess('restricted')} />
            <span>
              <span className="radio-title">Restricted</span>
              <span className="radio-desc">Only the scopes you choose.</span>
            </span>
          </label>
        </div>
      </fieldset>
      {access === 'restricted' && (
        <fieldset className={`fieldset scope-grid${err?.fieldError('scopes') ? ' field-invalid' : ''}`} aria-describedby={err?.fieldError('scopes') ? 'scopes-error' : undefined}>
          <legend className="field-label">Scopes</legend>
          <table className="scope-table">
            <thead>
              <tr>
                <th scope="col">Resource</th>
                <th scope="col">Read</th>
                <th scope="col">Write</th>
              </tr>
            </thead>
            <tbody>
              {RESOURCES.map((r) => (
                <tr key={r}>
                  <th scope="row">{RESOURCE_LABELS[r]}</th>
                  {(['read', 'write'] as const).map((mode) => {
                    const scope = `${r}:${mode}` as Scope;
                    return (
                      <td key={mode}>
                        <label className="check">
                          <input type="checkbox" checked={scopes.has(scope)} onChange={() => toggle(scope)} />
                          <span className="visually-hidden">{scope}</span>
                          <span aria-hidden="true" className="mono small">
                            {scope}
                          </span>
                        </label>
                      </td>
                    );
                  })}
                </tr>
              ))}
            </tbody>
          </table>
          {err?.fieldError('scopes') && (
            <p className="field-error" id="scopes-error">
              ⚠ {err.fieldError('scopes')}
            </p>
          )}
        </fieldset>
      )}
      <div className="form-row">
        <Field label="Expires" error={expiry !== 'custom' ? err?.fieldError('expiresAt') : undefined}>
          {(p) => (
            <select
              {...p}
              className="input"
              value={expiry}
              onChange={(e) => {
                setExpiry(e.target.value);
                create.fixField('expiresAt');
              }}
            >
              {EXPIRY_OPTIONS.map((o) => (
                <option key={o.value} value={o.value}>
                  {o.label}
                </option>
              ))}
            </select>
          )}
        </Field>
        {expiry === 'custom' && (
          <Field label="Expiry date" hint="The key stops working at the end of this day (UTC)." error={err?.fieldError('expiresAt')}>
            {(p) => (
              <input
                {...p}
                className="input"
                type="date"
                value={customDate}
                min={new Date(Date.now() + 86_400_000).toISOString().slice(0, 10)}
                onChange={(e) => {
                  setCustomDate(e.target.value);
                  const t = new Date(`${e.target.value}T23:59:59Z`).getTime();
                  create.fixField('expiresAt', Number.isFinite(t) && t > Date.now() ? undefined : 'Choose a date in the future');
                }}
              />
            )}
          </Field>
        )}
      </div>
    </FormDialog>
  );
}

function RollKeyDialog({ target, onClose, onRolled }: { target: ApiKeyDto | null; onClose: () => void; onRolled: () => void }) {
  const api = useApi();
  const [grace, setGrace] = useState<number>(86_400);
  const [rolled, setRolled] = useState<ApiKeyCreated | null>(null);
  const roll = useAction((id: string, gracePeriodSeconds: number) => unwrap(api.openapi.POST('/keys/{id}/roll', { params: { path: { id } }, body: { gracePeriodSeconds } })));
  const close = () => {
    setRolled(null);
    setGrace(86_400);
    roll.setError(null);
    onClose();
  };
  if (rolled) {
    return (
      <SecretDialog
        open={target !== null}
        onDone={close}
        title={`Key “${rolled.name}” rolled`}
        label="The new API key"
        secret={rolled.secret}
        warning={
          grace === 0 ? 'The old secret has stopped working. Deploy this one now.' : 'The old secret keeps working for the grace period you chose; deploy this one before then.'
        }
      />
    );
  }
  return (
    <FormDialog
      open={target !== null}
      onClose={close}
      title={`Roll “${target?.name ?? ''}”`}
      description="Rolling issues a new secret with the same name and scopes. The old secret keeps working for a grace period, so you can deploy the new one without downtime."
      onSubmit={async () => {
        if (!target) return;
        const key = await roll.run(target.id, grace);
        if (key) {
          setRolled(key);
          onRolled();
        }
      }}
      submitLabel="Roll key"
      pending={roll.pending}
      error={roll.error}
      fields={['gracePeriodSeconds']}
    >
      <Field label="Old secret stops working" error={roll.error?.fieldError('gracePeriodSeconds')}>
        {(p) => (
          <select {...p} className="input" value={grace} onChange={(e) => setGrace(Number(e.target.value))}>
            {GRACE_OPTIONS.map((o) => (
              <option key={o.value} value={o.value}>
                {o.label}
              </option>
            ))}
          </select>
        )}
      </Field>
    </FormDialog>
  );
}

function KeyRow({ k, onRoll, onRevoke }: { k: ApiKeyDto; onRoll: () => void; onRevoke: () => void }) {
  const state = keyState(k);
  const usable = USABLE.has(state.status);
  const rollable = usable && !k.replacedBy;
  return (
    <li className={`key-row${usable ? '' : ' is-muted'}`} data-key-id={k.id} data-testid="key-row">
      <div className="key-main">
        <div className="key-title">
          <span className="key-name">{k.name}</span>
          <StatusBadge status={state.status} label={state.label} />
        </div>
        <code className="key-hint">{k.hint}</code>
        <ScopeList scopes={k.scopes} />
        {k.replacedBy && usable && (
          <p className="key-replaced small" data-testid="key-replaced">
            Replaced by a rolled key; this secret stops working at {formatDate(k.expiresAt)}. Roll the new key if you need another.
          </p>
        )}
        <p className="key-meta">
          <span>Created {formatDate(k.createdAt, false)}</span>
          <span>Last used {k.lastUsedAt ? formatRelative(k.lastUsedAt) : 'never'}</span>
          <span>{k.revokedAt ? `Revoked ${formatDate(k.revokedAt)}` : k.expiresAt ? `Expires ${formatDate(k.expiresAt)}` : 'Never expires'}</span>
        </p>
      </div>
      {usable && (
        <div className="key-actions">
          {rollable && (
            <Button size="sm" onClick={onRoll} aria-label={`Roll key ${k.name}`}>
              Roll
            </Button>
          )}
          <Button size="sm" variant="danger" onClick={onRevoke} aria-label={`Revoke key ${k.name}`}>
            Revoke
          </Button>
        </div>
      )}
    </li>
  );
}

export function ApiKeysPage() {
  useDocumentTitle('API Keys');
  const api = useApi();
  const notify = useNotify();
  const keys = useResource<Page<ApiKeyDto>>('keys', (a, signal) => unwrap(a.openapi.GET('/keys', { params: { query: { limit: 100 } }, signal })));
  const [creating, setCreating] = useState(false);
  const [rolling, setRolling] = useState<ApiKeyDto | null>(null);
  const [revoking, setRevoking] = useState<ApiKeyDto | null>(null);
  const [showInactive, setShowInactive] = useState(false);
  const revoke = useAction(async (id: string) => {
    await unwrap(api.openapi.DELETE('/keys/{id}', { params: { path: { id } } }));
    return true;
  });

  const list = keys.data?.data ?? [];
  const active = list.filter((k) => USABLE.has(keyState(k).status));
  const inactive = list.filter((k) => !USABLE.has(keyState(k).status));

  return (
    <>
      <PageHeader
        eyebrow="Settings"
        title="API Keys"
        description={
          <>
            Keys authenticate your code: send <code>Authorization: Bearer &lt;API_KEY&gt;</code> with every request. Each key can be limited to some scopes and given an expiry.
          </>
        }
        actions={
          <Button variant="primary" onClick={() => setCreating(true)}>
            + Create API key
          </Button>
        }
      />
      <ErrorBanner error={keys.error} onRetry={() => void keys.reload()} />
      <Card title={`Active keys${keys.data ? ` (${active.length})` : ''}`}>
        <ListBody
          state={keys}
          count={active.length}
          empty={
            <EmptyState
              title="No active keys"
              icon="🔑"
              action={
                <Button variant="primary" onClick={() => setCreating(true)}>
                  Create your first key
                </Button>
              }
            >
              Create a key to call the API from your code, a notebook or <code>curl</code>.
            </EmptyState>
          }
        >
          <ul className="key-list" aria-label="Active API keys">
            {active.map((k) => (
              <KeyRow key={k.id} k={k} onRoll={() => setRolling(k)} onRevoke={() => setRevoking(k)} />
            ))}
          </ul>
        </ListBody>
      </Card>
      {inactive.length > 0 && (
        <Card
          title={`Revoked and expired (${inactive.length})`}
          actions={
            <Button size="sm" variant="ghost" aria-expanded={showInactive} onClick={() => setShowInactive((s) => !s)}>
              {showInactive ? 'Hide' : 'Show'}
            </Button>
          }
        >
          {showInactive ? (
            <ul className="key-list" aria-label="Revoked and expired API keys">
              {inactive.map((k) => (
                <KeyRow key={k.id} k={k} onRoll={() => undefined} onRevoke={() => undefined} />
              ))}
            </ul>
          ) : (
            <p className="muted">These keys no longer work. They are kept so you can see when they were last used.</p>
          )}
        </Card>
      )}
      <Alert tone="info" title="Keeping keys safe">
        <p>
          Never put a key in front-end code or a public repository. If one leaks, roll it: the new secret works at once, and the old one stops after the grace period you choose.
        </p>
      </Alert>
      <CreateKeyDialog open={creating} onClose={() => setCreating(false)} onCreated={() => void keys.reload()} />
      <RollKeyDialog target={rolling} onClose={() => setRolling(null)} onRolled={() => void keys.reload()} />
      <ConfirmDialog
        open={revoking !== null}
        title={`Revoke “${revoking?.name ?? ''}”?`}
        confirmLabel="Revoke key"
        pending={revoke.pending}
        error={revoke.error}
        onClose={() => {
          setRevoking(null);
          revoke.setError(null);
        }}
        onConfirm={async () => {
          if (!revoking) return;
          const name = revoking.name;
          const done = await revoke.run(revoking.id);
          if (done) {
            setRevoking(null);
            notify(`Key “${name}” revoked`);
            void keys.reload();
          }
        }}
      >
        <p>
          Requests with <code>{revoking?.hint}</code> will be refused with 401 within seconds, everywhere. This cannot be undone.
        </p>
      </ConfirmDialog>
    </>
  );
}
