import { useState, type FormEvent } from 'react';
import { ApiError, unwrap } from '../api/client.ts';
import type { ModelDto, PredictionDto } from '../api/types.ts';
import { formatMs, formatNumber } from '../format.ts';
import { useApi } from '../context.tsx';
import { useAction } from '../hooks.ts';
import { BarChart, LineChart } from './charts.tsx';
import { Badge, Button, ErrorBanner, Field, TableWrap } from './ui.tsx';

const SAMPLE_SERIES = '112, 118, 132, 129, 121, 135, 148, 148, 136, 119, 104, 118, 115, 126, 141, 135, 125, 149, 170, 170, 158, 133, 114, 140';

type Values = Record<string, string>;

function defaults(model: ModelDto): Values {
  const v: Values = {};
  for (const f of model.features) {
    if (f.type === 'number[]') v[f.name] = SAMPLE_SERIES;
    else if (f.name === 'horizon') v[f.name] = '12';
    else if (f.name === 'seasonLength') v[f.name] = '12';
    else v[f.name] = '';
  }
  return v;
}

/** The form's values as one model input; an empty optional field is left out so the model's default applies. */
function toInput(model: ModelDto, values: Values): Record<string, unknown> {
  const input: Record<string, unknown> = {};
  const errors: { path: string; message: string }[] = [];
  for (const f of model.features) {
    const raw = (values[f.name] ?? '').trim();
    if (raw === '') continue;
    if (f.type.endsWith('[]')) {
      const parts = raw.split(/[\s,;]+/).filter(Boolean);
      const nums = parts.map(Number);
      if (f.type.startsWith('number') && nums.some((n) => !Number.isFinite(n))) errors.push({ path: `inputs.0.${f.name}`, message: 'Use numbers separated by commas or spaces' });
      input[f.name] = f.type.startsWith('number') ? nums : parts;
    } else if (f.type === 'integer' || f.type === 'number') {
      const n = Number(raw);
      if (!Number.isFinite(n)) errors.push({ path: `inputs.0.${f.name}`, message: 'Enter a number' });
      input[f.name] = n;
    } else if (f.type === 'boolean') {
      input[f.name] = raw === 'true';
    } else {
      try {
        input[f.name] = f.type === 'string' ? raw : JSON.parse(raw);
      } catch {
        input[f.name] = raw;
      }
    }
  }
  if (errors.length) throw new ApiError({ status: 400, code: 'validation_failed', title: 'Check the highlighted fields', detail: '', errors });
  return input;
}

const numbers = (v: unknown): number[] | null => (Array.isArray(v) && v.every((x) => typeof x === 'number') ? (v as number[]) : null);

/** Forecasts and anomalies are drawn; any other output is shown as JSON. */
function PredictionChart({ input, output }: { input: Record<string, unknown>; output: Record<string, unknown> }) {
  const series = numbers(input.series);
  const forecast = numbers(output.forecast);
  if (series && forecast) {
    const n = series.length;
    const labels = [...series.map((_, i) => `t${i + 1}`), ...forecast.map((_, i) => `t${n + i + 1}`)];
    const pad = (xs: number[] | null, before: number) => (xs ? [...Array<null>(before).fill(null), ...xs] : []);
    const lower80 = numbers(output.lower80);
    const upper80 = numbers(output.upper80);
    const lower95 = numbers(output.lower95);
    const upper95 = numbers(output.upper95);
    return (
      <LineChart
        title="Observed values and forecast"
        labels={labels}
        series={[
          { name: 'Observed', values: [...series, ...Array<null>(forecast.length).fill(null)] },
          { name: 'Forecast', values: [...Array<null>(n - 1).fill(null), series[n - 1]!, ...forecast], dashed: true },
        ]}
        bands={[
          ...(lower95 && upper95 ? [{ name: '95% interval', lower: pad(lower95, n), upper: pad(upper95, n) }] : []),
          ...(lower80 && upper80 ? [{ name: '80% interval', lower: pad(lower80, n), upper: pad(upper80, n) }] : []),
        ]}
      />
    );
  }
  const anomalies = Array.isArray(output.anomalies) ? (output.anomalies as { index?: unknown; score?: unknown }[]) : null;
  if (series && anomalies) {
    return (
      <>
        <p className="muted small">{anomalies.length === 0 ? 'No anomalies found.' : `${anomalies.length} anomal${anomalies.length === 1 ? 'y' : 'ies'} flagged.`}</p>
        <LineChart
          title="Series with flagged anomalies"
          labels={series.map((_, i) => `t${i + 1}`)}
          series={[{ name: 'Observed', values: series }]}
          highlights={anomalies
            .filter((a): a is { index: number; score?: unknown } => typeof a.index === 'number' && a.index >= 0 && a.index < series.length)
            .map((a) => ({
              index: a.index,
              value: series[a.index]!,
              label: `t${a.index + 1}: ${formatNumber(series[a.index]!)}${typeof a.score === 'number' ? ` (score ${formatNumber(a.score)})` : ''}`,
            }))}
        />
      </>
    );
  }
  const probabilities =
    output.probabilities && typeof output.probabilities === 'object'
      ? Object.entries(output.probabilities as Record<string, unknown>).filter((e): e is [string, number] => typeof e[1] === 'number')
      : [];
  const answer = output.prediction ?? output.cluster;
  if (answer !== undefined) {
    return (
      <div className="prediction-answer">
        <p>
          <span className="muted">{output.cluster !== undefined ? 'Cluster' : 'Prediction'}</span>{' '}
          <span className="big-number" data-testid="prediction-value">
            {typeof answer === 'number' ? formatNumber(answer) : String(answer)}
          </span>
          {typeof output.distance === 'number' && <span className="muted"> · distance {formatNumber(output.distance)}</span>}
        </p>
        {probabilities.length > 1 && (
          <BarChart
            title="Class probabilities"
            showTitle
            valueLabel="probability"
            data={probabilities.map(([label, value]) => ({ label, value }))}
            height={180}
            format={(n) => formatNumber(Math.round(n * 1000) / 1000)}
          />
        )}
      </div>
    );
  }
  return null;
}

export function PredictionForm({ model, onPredicted }: { model: ModelDto; onPredicted?: () => void }) {
  const api = useApi();
  const [mode, setMode] = useState<'form' | 'json'>('form');
  const [values, setValues] = useState<Values>(() => defaults(model));
  const [json, setJson] = useState(() => JSON.stringify({ inputs: [safeInput(model, defaults(model))] }, null, 2));
  const [result, setResult] = useState<{ input: Record<string, unknown>; prediction: PredictionDto } | null>(null);
  const [explain, setExplain] = useState(false);
  const explainable = EXPLAINABLE_TYPES.has(model.type);
  const predict = useAction(async () => {
    let body: { inputs: Record<string, unknown>[]; explain?: boolean };
    if (mode === 'form') body = { inputs: [toInput(model, values)], ...(explain && explainable ? { explain: true } : {}) };
    else {
      try {
        body = JSON.parse(json) as { inputs: Record<string, unknown>[] };
      } catch (err) {
        throw new ApiError({
          status: 400,
          code: 'validation_failed',
          title: 'The request is not valid JSON',
          detail: (err as Error).message,
          errors: [{ path: 'json', message: 'Not valid JSON' }],
        });
      }
    }
    const prediction = await unwrap(api.openapi.POST('/models/{id}/predict', { params: { path: { id: model.id } }, body }));
    setResult({ input: body.inputs?.[0] ?? {}, prediction });
    onPredicted?.();
    return prediction;
  });
  const err = predict.error;
  const submit = (e: FormEvent) => {
    e.preventDefault();
    void predict.run();
  };

  return (
    <div className="predict">
      <div className="segmented" role="group" aria-label="Input mode">
        <button type="button" aria-pressed={mode === 'form'} className={mode === 'form' ? 'is-active' : ''} onClick={() => setMode('form')}>
          Form
        </button>
        <button
          type="button"
          aria-pressed={mode === 'json'}
          className={mode === 'json' ? 'is-active' : ''}
          onClick={() => {
            setJson(JSON.stringify({ inputs: [safeInput(model, values)] }, null, 2));
            setMode('json');
          }}
        >
          JSON (batches)
        </button>
      </div>
      <form className="form" onSubmit={submit} noValidate>
        <ErrorBanner error={err && err.fieldErrors.every((f) => !f.path.startsWith('inputs.0.') && f.path !== 'json') ? err : null} />
        {mode === 'form' ? (
          model.features.map((f) => (
            <Field key={f.name} label={`${f.name}`} hint={f.description} error={err?.fieldError(`inputs.0.${f.name}`) ?? err?.fieldError(f.name)}>
              {(p) =>
                f.type.endsWith('[]') ? (
                  <textarea {...p} className="input textarea mono" rows={3} value={values[f.name] ?? ''} onChange={(e) => setValues((v) => ({ ...v, [f.name]: e.target.value }))} />
                ) : f.type === 'boolean' ? (
                  <select {...p} className="input" value={values[f.name] ?? ''} onChange={(e) => setValues((v) => ({ ...v, [f.name]: e.target.value }))}>
                    <option value="">(default)</option>
                    <option value="true">true</option>
                    <option value="false">false</option>
                  </select>
                ) : (
                  <input
                    {...p}
                    className="input"
                    inputMode={f.type === 'integer' || f.type === 'number' ? 'decimal' : undefined}
                    value={values[f.name] ?? ''}
                    placeholder={f.type === 'integer' || f.type === 'number' ? 'optional' : ''}
                    onChange={(e) => setValues((v) => ({ ...v, [f.name]: e.target.value }))}
                  />
                )
              }
            </Field>
          ))
        ) : (
          <Field label="Request body" hint="Send several inputs at once; each gets its own prediction." error={err?.fieldError('json') ?? err?.fieldError('inputs')}>
            {(p) => <textarea {...p} className="input textarea mono" rows={10} value={json} onChange={(e) => setJson(e.target.value)} spellCheck={false} />}
          </Field>
        )}
        {mode === 'form' && explainable && (
          <label className="check">
            <input type="checkbox" checked={explain} onChange={(e) => setExplain(e.target.checked)} /> Explain the prediction
          </label>
        )}
        <div className="form-actions">
          <Button type="submit" variant="primary" loading={predict.pending}>
            Predict
          </Button>
        </div>
      </form>
      {result && (
        <div className="predict-result" aria-live="polite">
          <p className="result-meta">
            <Badge tone="success">
              {result.prediction.predictions.length} prediction{result.prediction.predictions.length === 1 ? '' : 's'}
            </Badge>
            <Badge>model time {formatMs(result.prediction.latencyMs)}</Badge>
            <Badge>
              version {result.prediction.modelVersion}
              {result.prediction.alias ? ` (${result.prediction.alias})` : ''}
            </Badge>
            <span className="mono small muted">{result.prediction.id}</span>
          </p>
          {result.prediction.predictions[0] && <PredictionChart input={result.input} output={result.prediction.predictions[0]} />}
          {result.prediction.predictions[0]?.explanation !== undefined && <ExplanationView explanation={result.prediction.predictions[0].explanation} />}
          <details className="query-json">
            <summary>Raw response</summary>
            <pre className="code-block">
              <code>{JSON.stringify(result.prediction, null, 2)}</code>
            </pre>
          </details>
        </div>
      )}
    </div>
  );
}

function safeInput(model: ModelDto, values: Values): Record<string, unknown> {
  try {
    return toInput(model, values);
  } catch {
    return {};
  }
}

/** Model types whose predictions the API can explain. */
const EXPLAINABLE_TYPES = new Set(['linear_regression', 'logistic_regression', 'random_forest_classifier', 'random_forest_regressor', 'holt_winters']);

const SPACE_LABELS: Record<string, string> = {
  prediction: 'the prediction',
  log_odds: 'the log-odds of the predicted class',
  probability: 'the probability of the predicted class',
};

/** Feature contributions (base + contributions = value), or a forecast's level, trend and season per step. */
export function ExplanationView({ explanation }: { explanation: unknown }) {
  const e = explanation as Record<string, unknown> | null;
  if (!e || typeof e !== 'object') return null;
  if (e.contributions && typeof e.contributions === 'object') {
    const rows = Object.entries(e.contributions as Record<string, number>).sort((a, b) => Math.abs(b[1]) - Math.abs(a[1]));
    return (
      <div className="explanation" data-testid="explanation">
        <h3 className="subheading">Why this answer</h3>
        <p className="muted small">
          Contributions to {SPACE_LABELS[String(e.space)] ?? String(e.space)}
          {e.class !== undefined ? ` (${String(e.class)})` : ''}: base value {formatNumber(e.baseValue as number)} + the contributions = {formatNumber(e.value as number)}.
          {e.method === 'tree_path' ? ' Credited along each tree’s decision path.' : ' Measured from the training means and the most frequent categories.'}
        </p>
        <TableWrap label="Feature contributions">
          <table className="table table-compact">
            <thead>
              <tr>
                <th scope="col">Feature</th>
                <th scope="col" className="num">
                  Contribution
                </th>
              </tr>
            </thead>
            <tbody>
              {rows.map(([name, v]) => (
                <tr key={name}>
                  <td className="mono">{name}</td>
                  <td className={`num ${v > 0 ? 'is-up' : v < 0 ? 'is-down' : ''}`}>
                    {v > 0 ? '+' : ''}
                    {formatNumber(v)}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableWrap>
      </div>
    );
  }
  if (Array.isArray(e.level) && Array.isArray(e.trend) && Array.isArray(e.season)) {
    const level = e.level as number[];
    const trend = e.trend as number[];
    const season = e.season as number[];
    return (
      <div className="explanation" data-testid="explanation">
        <h3 className="subheading">Forecast components</h3>
        <p className="muted small">Each forecast is level + trend + season.</p>
        <TableWrap label="Forecast components">
          <table className="table table-compact">
            <thead>
              <tr>
                <th scope="col">Step</th>
                <th scope="col" className="num">
                  Level
                </th>
                <th scope="col" className="num">
                  Trend
                </th>
                <th scope="col" className="num">
                  Season
                </th>
              </tr>
            </thead>
            <tbody>
              {level.map((l, h) => (
                <tr key={h}>
                  <th scope="row">+{h + 1}</th>
                  <td className="num">{formatNumber(l)}</td>
                  <td className="num">{formatNumber(trend[h]!)}</td>
                  <td className="num">{formatNumber(season[h]!)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableWrap>
      </div>
    );
  }
  return null;
}
