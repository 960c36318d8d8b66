import { useEffect, useState } from 'react';
import { unwrap } from '../api/client.ts';
import type { DashboardDto, DashboardSummaryDto, Page } from '../api/types.ts';
import { useApi } from '../context.tsx';
import { useAction, useResource } from '../hooks.ts';
import { Field, FormDialog, NotLoaded } from './ui.tsx';

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
  return (
    <FormDialog open={open} onClose={onClose} title={title} onSubmit={() => save.run(name)} submitLabel={confirmLabel} pending={save.pending} error={save.error} fields={['name']}>
      <Field label={label} error={save.error?.fieldError('name')} required>
        {(p) => <input {...p} className="input" value={name} maxLength={100} autoFocus onChange={(e) => setName(e.target.value)} />}
      </Field>
    </FormDialog>
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
  return (
    <FormDialog
      open={open}
      onClose={onClose}
      title="Add to dashboard"
      description="The insight becomes a tile in the dashboard's first free place; its chart is run afresh each time the dashboard opens."
      onSubmit={pin.run}
      submitLabel="Add to dashboard"
      submitDisabled={!choice}
      pending={pin.pending}
      error={pin.error}
      fields={['name']}
    >
      {!dashboards.data ? (
        <NotLoaded resource={dashboards} rows={1} />
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
    </FormDialog>
  );
}
