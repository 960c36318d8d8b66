import type { ReactNode } from 'react';
import { useState } from 'react';
import { unwrap } from '../api/client.ts';
import type { MetricsDto, ModelDto, ModelVersionDto, Page } from '../api/types.ts';
import { useApi, useNotify } from '../context.tsx';
import { BarChart } from '../components/charts.tsx';
import { PredictionForm } from '../components/prediction.tsx';
import {
  Alert,
  Badge,
  Button,
  ButtonLink,
  Card,
  ConfirmDialog,
  EmptyState,
  ErrorBanner,
  KeyValue,
  ListBody,
  Loading,
  PageHeader,
  PageNotLoaded,
  Stat,
  StatusBadge,
  TableWrap,
} from '../components/ui.tsx';
import { formatDate, formatInt, formatMs, formatNumber, formatPercent } from '../format.ts';
import { useAction, useDocumentTitle, useInterval, useResource } from '../hooks.ts';
import { NameOf, ReadableText, idsIn, useNames } from '../names.tsx';
import { Link, navigate } from '../router.tsx';
import { TRAINING_AVAILABLE } from './train-model.tsx';

const KIND_LABELS: Record<string, string> = { builtin: 'Built-in', trained: 'Trained', onnx: 'ONNX' };

export function ModelsPage() {
  useDocumentTitle('Models');
  const models = useResource<Page<ModelDto>>('models', (api, signal) => unwrap(api.openapi.GET('/models', { params: { query: { limit: 100 } }, signal })));
  const list = models.data?.data ?? [];
  const names = useNames(list.flatMap((m) => idsIn(m.description)));
  useInterval(() => void models.reload(), list.some((m) => m.status === 'training') ? 3_000 : null);
  return (
    <>
      <PageHeader
        title="Models"
        description="Built-in forecasting and anomaly detection run on any source with a time column. Train your own models on a source."
        actions={
          TRAINING_AVAILABLE && (
            <ButtonLink to="/models/new" variant="primary">
              + New model
            </ButtonLink>
          )
        }
      />
      <ErrorBanner error={models.error} onRetry={() => void models.reload()} />
      <ListBody
        state={models}
        count={list.length}
        empty={
          <Card>
            <EmptyState title="No models" icon="🧠" />
          </Card>
        }
      >
        <ul className="model-grid" aria-label="Models">
          {list.map((m) => (
            <li key={m.id} className="model-card">
              <div className="model-card-head">
                <Link to={`/models/${m.id}`} className="model-name strong-link">
                  {m.name}
                </Link>
                <StatusBadge status={m.status} />
              </div>
              <p className="model-badges">
                <Badge tone="accent">{KIND_LABELS[m.kind] ?? m.kind}</Badge>
                <Badge>{m.type}</Badge>
                <Badge>v{m.version}</Badge>
              </p>
              <p className="model-desc">
                <ReadableText text={m.description} names={names} />
              </p>
              <p className="model-features">
                <span className="muted small">Inputs: </span>
                {m.features.map((f) => (
                  <code key={f.name} className="small">
                    {f.name}
                  </code>
                ))}
              </p>
            </li>
          ))}
        </ul>
      </ListBody>
    </>
  );
}

/** Numeric top-level entries of an evaluation, split into error-like figures and 0–1 scores for charting. */
export function evaluationFigures(evaluation: Record<string, unknown>) {
  const numeric = Object.entries(evaluation).filter((e): e is [string, number] => typeof e[1] === 'number' && Number.isFinite(e[1]));
  const errors = numeric.filter(([k]) => /mae|mse|rmse|mape|error|loss/i.test(k));
  const scores = numeric.filter(([k, v]) => !errors.some(([e]) => e === k) && v >= 0 && v <= 1);
  return { numeric, errors, scores };
}

function ConfusionMatrix({ value }: { value: unknown }) {
  const cm = value as { labels?: unknown; matrix?: unknown } | null;
  if (!cm || !Array.isArray(cm.labels) || !Array.isArray(cm.matrix)) return null;
  const labels = cm.labels.map(String);
  const matrix = cm.matrix as number[][];
  return (
    <>
      <h3 className="subheading">Confusion matrix</h3>
      <TableWrap label="Confusion matrix">
        <table className="table table-compact confusion">
          <thead>
            <tr>
              <th scope="col">actual ↓ / predicted →</th>
              {labels.map((l) => (
                <th key={l} scope="col" className="num">
                  {l}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {matrix.map((row, i) => (
              <tr key={i}>
                <th scope="row">{labels[i]}</th>
                {row.map((n, j) => (
                  <td key={j} className={`num${i === j ? ' is-diagonal' : ''}`}>
                    {formatInt(n)}
                  </td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      </TableWrap>
    </>
  );
}

function Evaluation({ evaluation }: { evaluation: Record<string, unknown> | null }) {
  if (!evaluation) return <p className="muted">This model has no held-out evaluation.</p>;
  const { numeric, errors, scores } = evaluationFigures(evaluation);
  const baseline = evaluation.baseline as Record<string, unknown> | undefined;
  const rest = Object.entries(evaluation).filter(([k, v]) => typeof v !== 'number' && !['description', 'kind', 'confusionMatrix', 'task'].includes(k));
  return (
    <>
      {typeof evaluation.description === 'string' && <p className="muted">{evaluation.description}</p>}
      {evaluation.kind === 'holdout' && <p className="muted">Computed on rows held out of training{typeof evaluation.task === 'string' ? ` (${evaluation.task})` : ''}.</p>}
      <div className="stats stats-compact metric-stats">
        {numeric.map(([k, v]) => (
          <Stat key={k} label={humanize(k)} value={formatNumber(v)} />
        ))}
      </div>
      {errors.length >= 2 && (
        <BarChart title="Error, lower is better" showTitle valueLabel="error" data={errors.map(([k, v]) => ({ label: humanize(k), value: v }))} height={200} />
      )}
      {scores.length >= 2 && (
        <BarChart title="Scores, higher is better" showTitle valueLabel="score" data={scores.map(([k, v]) => ({ label: humanize(k), value: v }))} height={200} />
      )}
      {baseline && typeof baseline.description === 'string' && (
        <p className="muted small">
          Baseline ({baseline.description}):{' '}
          {Object.entries(baseline)
            .filter((e): e is [string, number] => typeof e[1] === 'number')
            .map(([k, v]) => `${humanize(k)} ${formatNumber(v)}`)
            .join(', ')}
        </p>
      )}
      <ConfusionMatrix value={evaluation.confusionMatrix} />
      {rest.length > 0 && (
        <details className="query-json">
          <summary>More details</summary>
          <pre className="code-block">
            <code>{JSON.stringify(Object.fromEntries(rest), null, 2)}</code>
          </pre>
        </details>
      )}
    </>
  );
}

const ACRONYMS = new Set(['mae', 'mse', 'rmse', 'mape', 'f1', 'r2', 'auc', 'roc', 'id']);

/** `seasonalNaiveMae` → "seasonal naive MAE", `coverage80` → "coverage 80". */
export function humanize(key: string): string {
  return key
    .replace(/([a-z])([A-Z])/g, '$1 $2')
    .replace(/([A-Za-z]{3,})(\d)/g, '$1 $2')
    .replace(/_/g, ' ')
    .split(' ')
    .map((w) => (ACRONYMS.has(w.toLowerCase()) ? w.toUpperCase() : w.toLowerCase()))
    .join(' ');
}

function Serving({ metrics }: { metrics: MetricsDto }) {
  const windows = [
    ['Last hour', metrics.serving.lastHour],
    ['Last day', metrics.serving.lastDay],
  ] as const;
  const rows: [string, (w: MetricsDto['serving']['lastHour']) => string][] = [
    ['Requests', (w) => formatInt(w.count)],
    ['Inputs predicted', (w) => formatInt(w.inputs)],
    ['Error rate', (w) => formatPercent(w.errorRate)],
    ['Latency p50', (w) => formatMs(w.latencyMs.p50)],
    ['Latency p95', (w) => formatMs(w.latencyMs.p95)],
    ['Latency p99', (w) => formatMs(w.latencyMs.p99)],
  ];
  return (
    <>
      <TableWrap label="Serving metrics">
        <table className="table table-compact" data-testid="serving">
          <thead>
            <tr>
              <th scope="col">Metric</th>
              {windows.map(([label]) => (
                <th key={label} scope="col" className="num">
                  {label}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {rows.map(([label, value]) => (
              <tr key={label}>
                <th scope="row">{label}</th>
                {windows.map(([w, data]) => (
                  <td key={w} className="num">
                    {value(data)}
                  </td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      </TableWrap>
      {metrics.serving.lastDay.latencyMs.p50 === null ? (
        <p className="muted">No successful predictions in the last day yet: try one above.</p>
      ) : (
        <BarChart
          title="Model latency percentiles (ms)"
          showTitle
          valueLabel="ms"
          height={200}
          format={(n) => `${formatNumber(Math.round(n * 100) / 100)} ms`}
          data={windows.flatMap(([label, w]) =>
            (['p50', 'p95', 'p99'] as const)
              .filter((p) => w.latencyMs[p] !== null)
              .map((p) => ({ label: `${p} · ${label === 'Last hour' ? '1 h' : '24 h'}`, value: w.latencyMs[p]! })),
          )}
        />
      )}
      {(metrics.serving.lastHour.sampled || metrics.serving.lastDay.sampled) && <p className="muted small">Percentiles come from a sample of the most recent requests.</p>}
    </>
  );
}

export function ModelDetailPage({ id }: { id: string }) {
  const model = useResource<ModelDto>(`model:${id}`, (api, signal) => unwrap(api.openapi.GET('/models/{id}', { params: { path: { id } }, signal })));
  const m = model.data;
  const names = useNames([...idsIn(m?.description), ...(m?.training ? [m.training.sourceId] : [])]);
  const metrics = useResource<MetricsDto>(m?.status === 'ready' ? `metrics:${id}` : null, (api, signal) =>
    unwrap(api.openapi.GET('/models/{id}/metrics', { params: { path: { id } }, signal })),
  );
  useDocumentTitle(m?.name ?? 'Model');
  useInterval(() => void model.reload(), m?.status === 'training' ? 3_000 : null);
  const api = useApi();
  const notify = useNotify();
  const [confirmDelete, setConfirmDelete] = useState(false);
  const remove = useAction(async () => {
    await unwrap(api.openapi.DELETE('/models/{id}', { params: { path: { id } } }));
    notify(`Model “${m?.name ?? id}” deleted`);
    navigate('/models');
  });

  if (!m) return <PageNotLoaded title="Model" back={{ to: '/models', label: 'Models' }} resource={model} rows={6} />;
  return (
    <>
      <PageHeader
        title={m.name}
        status={m.status}
        description={<ReadableText text={m.description} names={names} />}
        back={{ to: '/models', label: 'Models' }}
        actions={
          m.kind !== 'builtin' && (
            <Button variant="danger" onClick={() => setConfirmDelete(true)}>
              Delete model
            </Button>
          )
        }
      />
      <ConfirmDialog
        open={confirmDelete}
        title={`Delete “${m.name}”?`}
        confirmLabel="Delete model"
        pending={remove.pending}
        error={remove.error}
        onClose={() => {
          remove.setError(null);
          setConfirmDelete(false);
        }}
        onConfirm={() => void remove.run()}
      >
        <p>
          All {m.version === 1 ? 'its version' : `its ${m.version} versions`}, their aliases and metrics go with it
          {m.status === 'training' ? ', and the running training job stops' : ''}. Predictions against it will answer 404. This cannot be undone.
        </p>
      </ConfirmDialog>
      {m.status === 'failed' && (
        <Alert tone="error" title="Training failed">
          <p>{m.error ?? 'The model could not be trained.'}</p>
        </Alert>
      )}
      {m.status === 'training' && (
        <Alert tone="info" title="Training">
          <p>The model is learning from its source in the background. This page updates by itself.</p>
        </Alert>
      )}
      <div className="grid grid-1-2">
        <Card title="Details">
          <KeyValue
            items={[
              ['Kind', KIND_LABELS[m.kind] ?? m.kind],
              ...(m.training
                ? ([
                    ['Source', <NameOf key="src" id={m.training.sourceId} named={names(m.training.sourceId)} />],
                    ...(m.training.target ? ([['Target', <code key="t">{m.training.target}</code>]] as [string, ReactNode][]) : []),
                    ...(m.training.rows ? ([['Rows', `${formatInt(m.training.rows.train)} trained, ${formatInt(m.training.rows.test)} held out`]] as [string, ReactNode][]) : []),
                    ['Training time', formatMs(m.training.durationMs)],
                  ] as [string, ReactNode][])
                : []),
              ['Type', <code key="t">{m.type}</code>],
              ['Version', String(m.version)],
              ['Created', formatDate(m.createdAt, false)],
              ['ID', <code key="id">{m.id}</code>],
            ]}
          />
          <h3 className="subheading">Inputs</h3>
          <ul className="feature-list">
            {m.features.map((f) => (
              <li key={f.name}>
                <code>{f.name}</code> <Badge>{f.type}</Badge>
                <p className="muted small">{f.description}</p>
              </li>
            ))}
          </ul>
        </Card>
        <Card title="Try a prediction">
          {m.status === 'ready' ? <PredictionForm model={m} onPredicted={() => void metrics.reload()} /> : <p className="muted">The model can predict once it is ready.</p>}
        </Card>
      </div>
      {m.kind !== 'builtin' && (
        <VersionsCard
          model={m}
          onChanged={() => {
            void model.reload();
            void metrics.reload();
          }}
        />
      )}
      {m.status === 'ready' && metrics.data?.drift && metrics.data.drift.features.length > 0 && (
        <Card title="Input drift, last day">
          <p className="muted small">
            Population stability index of {formatInt(metrics.data.drift.inputs)} logged inputs against the training data: below 0.1 is stable, above 0.25 a significant shift.
          </p>
          <TableWrap label="Input drift">
            <table className="table table-compact">
              <thead>
                <tr>
                  <th scope="col">Feature</th>
                  <th scope="col">Kind</th>
                  <th scope="col" className="num">
                    Values
                  </th>
                  <th scope="col" className="num">
                    PSI
                  </th>
                  <th scope="col">Status</th>
                </tr>
              </thead>
              <tbody>
                {metrics.data.drift.features.map((f) => (
                  <tr key={f.feature}>
                    <td className="mono">{f.feature}</td>
                    <td>{f.kind}</td>
                    <td className="num">{formatInt(f.values)}</td>
                    <td className="num">{f.psi === null ? '—' : formatNumber(f.psi)}</td>
                    <td>
                      <Badge tone={f.status === 'stable' ? 'success' : f.status === 'moderate' ? 'warning' : f.status === 'significant' ? 'danger' : 'neutral'}>
                        {f.status.replace('_', ' ')}
                      </Badge>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </TableWrap>
        </Card>
      )}
      {m.status === 'ready' && (
        <div className="grid grid-2">
          <Card title="Evaluation">
            {metrics.error ? (
              <ErrorBanner error={metrics.error} onRetry={() => void metrics.reload()} />
            ) : !metrics.data ? (
              <Loading rows={3} />
            ) : (
              <Evaluation evaluation={metrics.data.evaluation} />
            )}
          </Card>
          <Card
            title="Serving"
            actions={
              <Button size="sm" variant="ghost" onClick={() => void metrics.reload()}>
                Refresh
              </Button>
            }
          >
            {!metrics.data ? !metrics.error && <Loading rows={3} /> : <Serving metrics={metrics.data} />}
          </Card>
        </div>
      )}
    </>
  );
}

const SHADOW_SHARES = [0, 0.01, 0.05, 0.1, 0.25, 0.5, 1];

/**
 * A model's versions with their held-out figures side by side, the aliases pointing at each (with buttons to
 * move `production` and `candidate`), retraining, and the share of live traffic copied to the candidate.
 */
function VersionsCard({ model, onChanged }: { model: ModelDto; onChanged: () => void }) {
  const api = useApi();
  const id = model.id;
  const versions = useResource<{ data: ModelVersionDto[] }>(`versions:${model.id}:${model.version}:${model.status}`, (a, signal) =>
    unwrap(a.openapi.GET('/models/{id}/versions', { params: { path: { id } }, signal })),
  );
  const aliases = model.aliases ?? { production: 1 };
  const candidate = aliases.candidate;
  const shadow = useResource<MetricsDto>(candidate !== undefined ? `metrics:${model.id}:candidate:${candidate}` : null, (a, signal) =>
    unwrap(a.openapi.GET('/models/{id}/metrics', { params: { path: { id }, query: { alias: 'candidate' } }, signal })),
  );
  const [share, setShare] = useState(String(model.shadowShare ?? 0));
  const move = useAction(async (body: { aliases?: Record<string, number | null>; shadowShare?: number }) => {
    await unwrap(api.openapi.POST('/models/{id}/aliases', { params: { path: { id } }, body }));
    onChanged();
    await versions.reload();
  });
  const retrain = useAction(async () => {
    await unwrap(api.openapi.POST('/models/{id}/versions', { params: { path: { id } }, body: {} }));
    onChanged();
  });
  const list = versions.data?.data ?? [];
  const figures = [...new Set(list.flatMap((v) => (v.evaluation ? evaluationFigures(v.evaluation).numeric.map(([k]) => k) : [])))];
  const s = shadow.data?.shadow ?? null;
  return (
    <Card
      title="Versions"
      actions={
        model.kind === 'trained' && (
          <Button size="sm" onClick={() => void retrain.run()} loading={retrain.pending} disabled={model.status === 'training'}>
            Retrain on current data
          </Button>
        )
      }
    >
      <ErrorBanner error={versions.error ?? move.error ?? retrain.error} />
      {!versions.data ? (
        !versions.error && <Loading rows={2} />
      ) : (
        <TableWrap label="Versions">
          <table className="table table-compact" data-testid="versions">
            <thead>
              <tr>
                <th scope="col"> </th>
                {list.map((v) => (
                  <th key={v.version} scope="col" className="num">
                    v{v.version} <StatusBadge status={v.status} />
                    <div>
                      {v.aliases.map((a) => (
                        <Badge key={a} tone={a === 'production' ? 'success' : 'accent'}>
                          {a}
                        </Badge>
                      ))}
                    </div>
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              <tr>
                <th scope="row">Trained</th>
                {list.map((v) => (
                  <td key={v.version} className="num">
                    {formatDate(v.createdAt, false)}
                  </td>
                ))}
              </tr>
              {figures.map((k) => (
                <tr key={k}>
                  <th scope="row">{humanize(k)}</th>
                  {list.map((v) => {
                    const value = v.evaluation?.[k];
                    return (
                      <td key={v.version} className="num">
                        {typeof value === 'number' ? formatNumber(value) : '—'}
                      </td>
                    );
                  })}
                </tr>
              ))}
              <tr>
                <th scope="row">Aliases</th>
                {list.map((v) => (
                  <td key={v.version} className="num">
                    {v.status === 'ready' && !v.aliases.includes('production') && (
                      <Button
                        size="sm"
                        variant="ghost"
                        onClick={() => void move.run({ aliases: { production: v.version, ...(candidate === v.version ? { candidate: null } : {}) } })}
                      >
                        Make production
                      </Button>
                    )}
                    {v.status === 'ready' && !v.aliases.includes('candidate') && !v.aliases.includes('production') && (
                      <Button size="sm" variant="ghost" onClick={() => void move.run({ aliases: { candidate: v.version } })}>
                        Make candidate
                      </Button>
                    )}
                    {v.aliases.includes('candidate') && (
                      <Button size="sm" variant="ghost" onClick={() => void move.run({ aliases: { candidate: null } })}>
                        Clear candidate
                      </Button>
                    )}
                  </td>
                ))}
              </tr>
            </tbody>
          </table>
        </TableWrap>
      )}
      {candidate !== undefined && (
        <>
          <h3 className="subheading">Shadow traffic to the candidate (v{candidate})</h3>
          <form
            className="form form-inline"
            onSubmit={(e) => {
              e.preventDefault();
              void move.run({ shadowShare: Number(share) });
            }}
          >
            <label>
              Share of production predictions copied{' '}
              <select className="input" value={share} onChange={(e) => setShare(e.target.value)}>
                {SHADOW_SHARES.map((v) => (
                  <option key={v} value={String(v)}>
                    {formatPercent(v)}
                  </option>
                ))}
              </select>
            </label>
            <Button size="sm" type="submit" loading={move.pending}>
              Save
            </Button>
          </form>
          {s ? (
            <KeyValue
              items={[
                ['Copied requests (last day)', `${formatInt(s.requests)} (${formatInt(s.errors)} failed)`],
                ...(s.agreement !== null ? ([['Agreement with production', formatPercent(s.agreement)]] as [string, ReactNode][]) : []),
                ...(s.meanAbsoluteDifference !== null ? ([['Mean |candidate − production|', formatNumber(s.meanAbsoluteDifference)]] as [string, ReactNode][]) : []),
                ['Latency p50 candidate / production', `${formatMs(s.latencyMs.p50)} / ${formatMs(s.productionLatencyMs.p50)}`],
              ]}
            />
          ) : (
            <p className="muted small">No shadow predictions in the last day.</p>
          )}
        </>
      )}
    </Card>
  );
}
