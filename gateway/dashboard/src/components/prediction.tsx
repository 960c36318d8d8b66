import { useState, type FormEvent } from 'react';
import { ApiError, unwrap } from '../api/client.ts';
import type { Granularity, ModelDto, Page, PredictionDto, SourceDto } from '../api/types.ts';
import { GRANULARITY_LIST, MEASURES } from '../api/types.ts';
import { formatInt, formatMs, formatNumber } from '../format.ts';
import { useApi } from '../context.tsx';
import { useAction, useResource } from '../hooks.ts';
import { Link } from '../router.tsx';
import { SERIES_OPS, bucketLabel, futureDates, loadSourceSeries, numericColumns, timeColumns, type SeriesOp, type SeriesSpec } from '../source-series.ts';
import { BarChart, LineChart } from './charts.tsx';
import { Alert, Badge, Button, ErrorBanner, Field, TableWrap } from './ui.tsx';

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

/**
 * The form's values as one model input. An empty field is left out of a built-in's input so its default
 * applies, and is null (a missing value) for a trained model, which needs every feature.
 */
function toInput(model: ModelDto, values: Values, skip: readonly string[] = []): Record<string, unknown> {
  const input: Record<string, unknown> = {};
  const errors: { path: string; message: string }[] = [];
  for (const f of model.features) {
    if (skip.includes(f.name)) continue;
    const raw = (values[f.name] ?? '').trim();
    if (raw === '') {
      if (model.kind === 'trained') input[f.name] = null;
      continue;
    }
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

/** Where a series came from: the dates of its buckets, so the chart's axis shows them. */
export interface SeriesDates {
  dates: string[];
  granularity: Granularity;
}

/** Forecasts and anomalies are drawn (over dates when the series came from a source); any other output is shown as JSON. */
function PredictionChart({ input, output, dated }: { input: Record<string, unknown>; output: Record<string, unknown>; dated?: SeriesDates | undefined }) {
  const series = numbers(input.series);
  const forecast = numbers(output.forecast);
  const historyLabels = (n: number) => (dated ? dated.dates.map((d) => bucketLabel(d, dated.granularity)) : Array.from({ length: n }, (_, i) => `t${i + 1}`));
  if (series && forecast) {
    const n = series.length;
    const ahead = dated ? futureDates(dated.dates[dated.dates.length - 1]!, dated.granularity, forecast.length).map((d) => bucketLabel(d, dated.granularity)) : null;
    const labels = [...historyLabels(n), ...(ahead ?? forecast.map((_, i) => `t${n + i + 1}`))];
    const pad = (xs: number[] | null, before: number) => (xs ? [...Array<null>(before).fill(null), ...xs] : []);
    const lower80 = numbers(output.lower80);
    const upper80 = numbers(output.upper80);
    const lower95 = numbers(output.lower95);
    const upper95 = numbers(output.upper95);
    return (
      <>
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
        {ahead && (
          <TableWrap label="Forecast by date">
            <table className="table table-compact" data-testid="forecast-table">
              <thead>
                <tr>
                  <th scope="col">Period</th>
                  <th scope="col" className="num">
                    Forecast
                  </th>
                  <th scope="col" className="num">
                    80% interval
                  </th>
                </tr>
              </thead>
              <tbody>
                {forecast.map((v, h) => (
                  <tr key={h}>
                    <th scope="row">{ahead[h]}</th>
                    <td className="num">{formatNumber(v)}</td>
                    <td className="num">{lower80 && upper80 ? `${formatNumber(lower80[h]!)} – ${formatNumber(upper80[h]!)}` : '—'}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </TableWrap>
        )}
      </>
    );
  }
  const anomalies = Array.isArray(output.anomalies) ? (output.anomalies as { index?: unknown; score?: unknown; expected?: unknown }[]) : null;
  if (series && anomalies) {
    const labels = historyLabels(series.length);
    const found = anomalies.filter((a): a is { index: number; score?: unknown; expected?: unknown } => typeof a.index === 'number' && a.index >= 0 && a.index < series.length);
    return (
      <>
        <p className="muted small">{found.length === 0 ? 'No anomalies found.' : `${found.length} anomal${found.length === 1 ? 'y' : 'ies'} flagged.`}</p>
        <LineChart
          title="Series with flagged anomalies"
          labels={labels}
          series={[{ name: 'Observed', values: series }]}
          highlights={found.map((a) => ({
            index: a.index,
            value: series[a.index]!,
            label: `${labels[a.index]}: ${formatNumber(series[a.index]!)}${typeof a.score === 'number' ? ` (score ${formatNumber(a.score)})` : ''}`,
          }))}
        />
        {found.length > 0 && (
          <TableWrap label="Flagged anomalies">
            <table className="table table-compact" data-testid="anomaly-table">
              <thead>
                <tr>
                  <th scope="col">{dated ? 'Period' : 'Point'}</th>
                  <th scope="col" className="num">
                    Value
                  </th>
                  <th scope="col" className="num">
                    Expected
                  </th>
                  <th scope="col" className="num">
                    Score
                  </th>
                </tr>
              </thead>
              <tbody>
                {found.map((a) => (
                  <tr key={a.index}>
                    <th scope="row">{labels[a.index]}</th>
                    <td className="num">{formatNumber(series[a.index]!)}</td>
                    <td className="num">{typeof a.expected === 'number' ? formatNumber(a.expected) : '—'}</td>
                    <td className="num">{typeof a.score === 'number' ? formatNumber(a.score) : '—'}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </TableWrap>
        )}
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

type Mode = 'source' | 'form' | 'json';
const MODE_LABELS: Record<Mode, string> = { source: 'From a source', form: 'Form', json: 'JSON (batches)' };
/** The select entry that opens a free-text field for a category the model did not learn. */
const OTHER_VALUE = '\u0000other';
const SERIES_OP_LABELS = Object.fromEntries(MEASURES.map((m) => [m.op, m.label])) as Record<string, string>;

/** A series taken from a source: which source, time field, column, aggregation, granularity and history. */
type SeriesChoice = Omit<SeriesSpec, 'sourceId' | 'timeField' | 'column'> & { sourceId: string; timeField: string; column: string };

/** Sources a series can come from: ready, with a time column. */
const seriesSources = (list: readonly SourceDto[]) => list.filter((s) => s.status === 'ready' && timeColumns(s.schema ?? []).length > 0);

function choiceFor(source: SourceDto | undefined, prev: SeriesChoice): SeriesChoice {
  const schema = source?.schema ?? [];
  const time = timeColumns(schema);
  const nums = numericColumns(schema);
  return {
    ...prev,
    sourceId: source?.id ?? '',
    timeField: time.some((c) => c.name === prev.timeField) ? prev.timeField : (time[0]?.name ?? ''),
    column: nums.some((c) => c.name === prev.column) ? prev.column : (nums[0]?.name ?? ''),
    op: nums.length === 0 ? 'count' : prev.op,
  };
}

export function PredictionForm({ model, onPredicted }: { model: ModelDto; onPredicted?: () => void }) {
  const api = useApi();
  const takesSeries = model.features.some((f) => f.name === 'series' && f.type === 'number[]');
  const sources = useResource<Page<SourceDto>>(takesSeries ? 'sources' : null, (a, signal) => unwrap(a.openapi.GET('/sources', { params: { query: { limit: 100 } }, signal })));
  const eligible = seriesSources(sources.data?.data ?? []);
  const [mode, setMode] = useState<Mode>(takesSeries ? 'source' : 'form');
  const [values, setValues] = useState<Values>(() => defaults(model));
  const [otherOpen, setOtherOpen] = useState<Record<string, boolean>>({});
  const [choice, setChoice] = useState<SeriesChoice>({ sourceId: '', timeField: '', column: '', op: 'sum', granularity: 'day', buckets: 90 });
  const chosen = choiceFor(eligible.find((s) => s.id === choice.sourceId) ?? eligible[0], choice);
  const chosenSource = eligible.find((s) => s.id === chosen.sourceId);
  const [json, setJson] = useState(() => JSON.stringify({ inputs: [safeInput(model, defaults(model))] }, null, 2));
  const [result, setResult] = useState<{ input: Record<string, unknown>; prediction: PredictionDto; dated?: SeriesDates; note?: string } | null>(null);
  const [explain, setExplain] = useState(false);
  const explainable = EXPLAINABLE_TYPES.has(model.type);
  const predict = useAction(async () => {
    let body: { inputs: Record<string, unknown>[]; explain?: boolean };
    let dated: SeriesDates | undefined;
    let note: string | undefined;
    if (mode === 'source') {
      if (!chosenSource) throw new ApiError({ status: 400, code: 'validation_failed', title: 'Choose a source with a time column first', detail: '' });
      const rest = toInput(model, values, ['series']);
      const minPoints = typeof rest.seasonLength === 'number' ? Math.max(3, 2 * rest.seasonLength) : 3;
      const series = await loadSourceSeries(api, chosen, minPoints);
      dated = { dates: series.dates, granularity: chosen.granularity };
      note = [
        `${formatInt(series.values.length)} ${chosen.granularity} periods of ${chosenSource.name}, UTC`,
        series.filled ? `${formatInt(series.filled)} without data filled (${chosen.op === 'sum' || chosen.op === 'count' ? 'as 0' : 'between their neighbours'})` : '',
        series.droppedPartial ? 'the period still running left out' : '',
      ]
        .filter(Boolean)
        .join('; ');
      body = { inputs: [{ ...rest, series: series.values }], ...(explain && explainable ? { explain: true } : {}) };
    } else if (mode === 'form') body = { inputs: [toInput(model, values)], ...(explain && explainable ? { explain: true } : {}) };
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
    setResult({ input: body.inputs?.[0] ?? {}, prediction, ...(dated ? { dated } : {}), ...(note ? { note } : {}) });
    onPredicted?.();
    return prediction;
  });
  const err = predict.error;
  const submit = (e: FormEvent) => {
    e.preventDefault();
    void predict.run();
  };
  const set = (name: string, value: string) => setValues((v) => ({ ...v, [name]: value }));
  const modes: Mode[] = takesSeries ? ['source', 'form', 'json'] : ['form', 'json'];
  const fieldsShown = model.features.filter((f) => mode !== 'source' || f.name !== 'series');
  const schema = chosenSource?.schema ?? [];

  return (
    <div className="predict">
      <div className="segmented" role="group" aria-label="Input mode">
        {modes.map((m) => (
          <button
            key={m}
            type="button"
            aria-pressed={mode === m}
            className={mode === m ? 'is-active' : ''}
            onClick={() => {
              if (m === 'json') setJson(JSON.stringify({ inputs: [safeInput(model, values)] }, null, 2));
              setMode(m);
            }}
          >
            {MODE_LABELS[m]}
          </button>
        ))}
      </div>
      <form className="form" onSubmit={submit} noValidate>
        <ErrorBanner error={err && err.fieldErrors.every((f) => !f.path.startsWith('inputs.0.') && f.path !== 'json' && !f.path.startsWith('series.')) ? err : null} />
        {mode === 'source' &&
          (sources.error ? (
            <ErrorBanner error={sources.error} onRetry={() => void sources.reload()} />
          ) : sources.data && eligible.length === 0 ? (
            <p className="muted">
              No ready source has a time column yet. <Link to="/sources/new">Connect one</Link>, or type the numbers in the Form.
            </p>
          ) : (
            <div className="form-row" data-testid="series-source">
              <Field label="Source">
                {(p) => (
                  <select
                    {...p}
                    className="input"
                    value={chosen.sourceId}
                    onChange={(e) =>
                      setChoice(
                        choiceFor(
                          eligible.find((s) => s.id === e.target.value),
                          chosen,
                        ),
                      )
                    }
                  >
                    {eligible.map((s) => (
                      <option key={s.id} value={s.id}>
                        {s.name}
                      </option>
                    ))}
                  </select>
                )}
              </Field>
              <Field label="Time field">
                {(p) => (
                  <select {...p} className="input" value={chosen.timeField} onChange={(e) => setChoice({ ...chosen, timeField: e.target.value })}>
                    {timeColumns(schema).map((c) => (
                      <option key={c.name} value={c.name}>
                        {c.name}
                      </option>
                    ))}
                  </select>
                )}
              </Field>
              <Field label="Aggregation">
                {(p) => (
                  <select {...p} className="input" value={chosen.op} onChange={(e) => setChoice({ ...chosen, op: e.target.value as SeriesOp })}>
                    {SERIES_OPS.filter((op) => op === 'count' || numericColumns(schema).length > 0).map((op) => (
                      <option key={op} value={op}>
                        {op === 'count' ? 'Count of rows' : (SERIES_OP_LABELS[op] ?? op)}
                      </option>
                    ))}
                  </select>
                )}
              </Field>
              {chosen.op !== 'count' && (
                <Field label="Column">
                  {(p) => (
                    <select {...p} className="input" value={chosen.column} onChange={(e) => setChoice({ ...chosen, column: e.target.value })}>
                      {numericColumns(schema).map((c) => (
                        <option key={c.name} value={c.name}>
                          {c.name}
                        </option>
                      ))}
                    </select>
                  )}
                </Field>
              )}
              <Field label="Granularity" error={err?.fieldError('series.granularity')}>
                {(p) => (
                  <select {...p} className="input" value={chosen.granularity} onChange={(e) => setChoice({ ...chosen, granularity: e.target.value as Granularity })}>
                    {GRANULARITY_LIST.map((g) => (
                      <option key={g} value={g}>
                        {g}
                      </option>
                    ))}
                  </select>
                )}
              </Field>
              <Field label="Periods of history" hint="The latest whole periods, in UTC.">
                {(p) => (
                  <input
                    {...p}
                    className="input"
                    type="number"
                    min={3}
                    max={10_000}
                    value={chosen.buckets}
                    onChange={(e) => setChoice({ ...chosen, buckets: Math.max(3, Math.min(10_000, Math.round(Number(e.target.value) || 3))) })}
                  />
                )}
              </Field>
            </div>
          ))}
        {mode !== 'json' ? (
          fieldsShown.map((f) => {
            return (
              <Field key={f.name} label={`${f.name}`} hint={f.description} error={err?.fieldError(`inputs.0.${f.name}`) ?? err?.fieldError(f.name)}>
                {(p) =>
                  f.type.endsWith('[]') ? (
                    <textarea {...p} className="input textarea mono" rows={3} value={values[f.name] ?? ''} onChange={(e) => set(f.name, e.target.value)} />
                  ) : f.type === 'boolean' ? (
                    <select {...p} className="input" value={values[f.name] ?? ''} onChange={(e) => set(f.name, e.target.value)}>
                      <option value="">{model.kind === 'trained' ? '(missing)' : '(default)'}</option>
                      <option value="true">true</option>
                      <option value="false">false</option>
                    </select>
                  ) : f.categories ? (
                    <div className="field-pair">
                      <select
                        {...p}
                        className="input"
                        value={otherOpen[f.name] ? OTHER_VALUE : (values[f.name] ?? '')}
                        onChange={(e) => {
                          const other = e.target.value === OTHER_VALUE;
                          setOtherOpen((o) => ({ ...o, [f.name]: other }));
                          set(f.name, other ? '' : e.target.value);
                        }}
                      >
                        <option value="">(missing)</option>
                        {f.categories.map((c) => (
                          <option key={c} value={c}>
                            {c}
                          </option>
                        ))}
                        <option value={OTHER_VALUE}>Another value…</option>
                      </select>
                      {otherOpen[f.name] && (
                        <input
                          className="input"
                          aria-label={`${f.name}, another value`}
                          value={values[f.name] ?? ''}
                          onChange={(e) => set(f.name, e.target.value)}
                          placeholder="A value not seen in training"
                        />
                      )}
                    </div>
                  ) : f.type === 'integer' || f.type === 'number' ? (
                    <input
                      {...p}
                      className="input"
                      type="number"
                      step={f.type === 'integer' ? 1 : 'any'}
                      inputMode="decimal"
                      value={values[f.name] ?? ''}
                      placeholder={f.range?.mean != null ? `e.g. ${formatNumber(f.range.mean)}` : model.kind === 'trained' ? 'empty: missing' : 'optional'}
                      onChange={(e) => set(f.name, e.target.value)}
                    />
                  ) : (
                    <input {...p} className="input" value={values[f.name] ?? ''} onChange={(e) => set(f.name, e.target.value)} />
                  )
                }
              </Field>
            );
          })
        ) : (
          <Field label="Request body" hint="Send several inputs at once; each gets its own prediction." error={err?.fieldError('json') ?? err?.fieldError('inputs')}>
            {(p) => <textarea {...p} className="input textarea mono" rows={10} value={json} onChange={(e) => setJson(e.target.value)} spellCheck={false} />}
          </Field>
        )}
        {mode !== 'json' && explainable && (
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
          {result.note && (
            <p className="muted small" data-testid="series-note">
              {result.note}
            </p>
          )}
          {result.prediction.predictions[0] && <UnknownCategories output={result.prediction.predictions[0]} />}
          {result.prediction.predictions[0] && <PredictionChart input={result.input} output={result.prediction.predictions[0]} dated={result.dated} />}
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

/** The API's flag on an input whose category the model never learned: its answer deserves less trust. */
function UnknownCategories({ output }: { output: Record<string, unknown> }) {
  const unknown = output.unknownCategories;
  if (!unknown || typeof unknown !== 'object') return null;
  const entries = Object.entries(unknown as Record<string, unknown>);
  if (entries.length === 0) return null;
  return (
    <div data-testid="unknown-categories">
      <Alert tone="warning" title="Not seen in training">
        <ul className="plain-list">
          {entries.map(([feature, value]) => (
            <li key={feature}>
              <code>{feature}</code> = “{String(value)}” is not a category the model learned: it answers as for any unseen value.
            </li>
          ))}
        </ul>
      </Alert>
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
