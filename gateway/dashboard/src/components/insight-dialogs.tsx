import { useEffect, useState, type FormEvent } from 'react';
import { unwrap, type ApiError } from '../api/client.ts';
import type { DashboardDto, DashboardSummaryDto, Page } from '../api/types.ts';
import { useApi } from '../context.tsx';
import { useAction, useResource } from '../hooks.ts';
import { Button, Dialog, ErrorBanner, Field, Loading } from './ui.tsx';

/** Asks for a name (saving or renaming an insight or a dashboard); the API's field error shows under the field. */
export function NameDialog({
  open,
  title,
  label,
  initial,
  confirmLabel,
  onClose,
  onSubmit,
}: {
  open: boolean;
  title: string;
  label: string;
  initial: string;
  confirmLabel: string;
  onClose: () => void;
  onSubmit: (name: string) => Promise<unknown>;
}) {
  const [name, setName] = useState(initial);
  const save = useAction(async (value: string) => {
    await onSubmit(value);
    onClose();
  });
  useEffect(() => {
    if (open) {
      setName(initial);
      save.setError(null);
    }
  }, [open, initial]);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    void save.run(name);
  };
  const err: ApiError | null = save.error;
  return (
    <Dialog open={open} onClose={onClose} title={title}>
      <form onSubmit={submit} noValidate>
        <div className="dialog-body">
          <Field label={label} error={err?.fieldError('name')} required>
            {(p) => <input {...p} className="input" value={name} maxLength={100} autoFocus onChange={(e) => setName(e.target.value)} />}
          </Field>
        </div>
        {err && !err.fieldError('name') && <ErrorBanner error={err} />}
        <div className="dialog-footer">
          <Button onClick={onClose} disabled={save.pending}>
            Cancel
          </Button>
          <Button type="submit" variant="primary" loading={save.pending}>
            {confirmLabel}
          </Button>
        </div>
      </form>
    </Dialog>
  );
}

/** Pins an insight to a dashboard: an existing one, or a new one named here. Calls `onPinned` with the dashboard. */
export function PinDialog({ open, insightId, onClose, onPinned }: { open: boolean; insightId: string | null; onClose: () => void; onPinned: (d: DashboardDto) => void }) {
  const api = useApi();
  const dashboards = useResource<Page<DashboardSummaryDto>>(open ? 'dashboards' : null, (a, signal) =>
    unwrap(a.openapi.GET('/analytics/dashboards', { params: { query: { limit: 100 } }, signal })),
  );
  const [choice, setChoice] = useState('');
  const [newName, setNewName] = useState('');
  useEffect(() => {
    if (open) pin.setError(null);
  }, [open]);
  useEffect(() => {
    if (!choice && dashboards.data) setChoice(dashboards.data.data[0]?.id ?? 'new');
  }, [dashboards.data, choice]);
  const pin = useAction(async () => {
    if (!insightId) return;
    let id = choice;
    if (choice === 'new') id = (await unwrap(api.openapi.POST('/analytics/dashboards', { body: { name: newName } }))).id;
    const dashboard = await unwrap(api.openapi.POST('/analytics/dashboards/{id}/tiles', { params: { path: { id } }, body: { insightId, w: 6, h: 4 } }));
    onPinned(dashboard);
    onClose();
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    void pin.run();
  };
  return (
    <Dialog
      open={open}
      onClose={onClose}
      title="Add to dashboard"
      description="The insight becomes a tile in the dashboard's first free place; its chart is run afresh each time the dashboard opens."
    >
      <form onSubmit={submit} noValidate>
        <div className="dialog-body">
          {!dashboards.data ? (
            dashboards.error ? (
              <ErrorBanner error={dashboards.error} onRetry={() => void dashboards.reload()} />
            ) : (
              <Loading rows={1} />
            )
          ) : (
            <Field label="Dashboard">
              {(p) => (
                <select {...p} className="input" value={choice} onChange={(e) => setChoice(e.target.value)}>
                  {dashboards.data!.data.map((d) => (
                    <option key={d.id} value={d.id}>
                      {d.name} ({d.tileCount} {d.tileCount === 1 ? 'tile' : 'tiles'})
                    </option>
                  ))}
                  <option value="new">A new dashboard…</option>
                </select>
              )}
            </Field>
          )}
          {choice === 'new' && (
            <Field label="New dashboard's name" error={pin.error?.fieldError('name')} required>
              {(p) => <input {...p} className="input" value={newName} maxLength={100} onChange={(e) => setNewName(e.target.value)} />}
            </Field>
          )}
        </div>
        {pin.error && !pin.error.fieldError('name') && <ErrorBanner error={pin.error} />}
        <div className="dialog-footer">
          <Button onClick={onClose} disabled={pin.pending}>
            Cancel
          </Button>
          <Button type="submit" variant="primary" loading={pin.pending} disabled={!choice}>
            Add to dashboard
          </Button>
        </div>
      </form>
    </Dialog>
  );
}
