import { useEffect, useMemo, useState, type ChangeEvent, type FormEvent } from 'react';
import { ApiError, unwrap, type RequestBodyOf } from '../api/client.ts';
import type { Page, SourceDto } from '../api/types.ts';
import { Button, ButtonLink, Card, EmptyState, ErrorBanner, Field, Loading, PageHeader } from '../components/ui.tsx';
import { useApi, useNotify } from '../context.tsx';
import { useAction, useDocumentTitle, useResource } from '../hooks.ts';
import { navigate } from '../router.tsx';
import type { TRAINABLE_MODEL_TYPES } from '../../../../libs/contracts/src/api/models.api.ts';

/** POST /v1/models exists: training from a source, and ONNX uploads. */
export const TRAINING_AVAILABLE = true;

type TrainableType = (typeof TRAINABLE_MODEL_TYPES)[number];
type Task = 'regression' | 'classification' | 'clustering';

interface Hyper {
  name: string;
  label: string;
  placeholder: string;
  hint?: string;
}

const COMMON: Hyper[] = [
  { name: 'testFraction', label: 'Held-out share', placeholder: '0.2', hint: 'Rows kept out of training to evaluate on (0.05–0.5).' },
  { name: 'seed', label: 'Random seed', placeholder: '42' },
  { name: 'maxCategories', label: 'Categories per text feature', placeholder: '20' },
];

/** Every trainable type the API accepts; the type check fails until a new one is described here. */
const TYPES: Record<TrainableType, { label: string; task: Task; text: string; hyper: Hyper[] }> = {
  linear_regression: { label: 'Linear regression', task: 'regression', text: 'Predicts a number as a weighted sum of the features. Fast and explainable.', hyper: [] },
  random_forest_regressor: {
    label: 'Random forest (regression)',
    task: 'regression',
    text: 'Predicts a number with an ensemble of trees; captures non-linear effects.',
    hyper: [
      { name: 'nEstimators', label: 'Trees', placeholder: '25' },
      { name: 'maxDepth', label: 'Max depth', placeholder: '8' },
      { name: 'minSamplesLeaf', label: 'Min rows per leaf', placeholder: '3' },
      { name: 'maxFeatures', label: 'Feature share per tree', placeholder: '0.8' },
      { name: 'sampleRows', label: 'Training rows', placeholder: '2000' },
    ],
  },
  logistic_regression: {
    label: 'Logistic regression',
    task: 'classification',
    text: 'Predicts a class with probabilities from a linear model.',
    hyper: [
      { name: 'learningRate', label: 'Learning rate', placeholder: '0.5' },
      { name: 'maxIterations', label: 'Max iterations', placeholder: '300' },
    ],
  },
  random_forest_classifier: {
    label: 'Random forest (classification)',
    task: 'classification',
    text: 'Predicts a class with an ensemble of trees, with probabilities.',
    hyper: [
      { name: 'nEstimators', label: 'Trees', placeholder: '25' },
      { name: 'maxDepth', label: 'Max depth', placeholder: '8' },
      { name: 'minSamplesLeaf', label: 'Min rows per leaf', placeholder: '3' },
      { name: 'maxFeatures', label: 'Feature share per tree', placeholder: '0.8' },
      { name: 'sampleRows', label: 'Training rows', placeholder: '2000' },
    ],
  },
  kmeans: {
    label: 'K-means clustering',
    task: 'clustering',
    text: 'Groups rows into k clusters of similar rows; no target needed.',
    hyper: [
      { name: 'k', label: 'Clusters (k)', placeholder: '3' },
      { name: 'maxIterations', label: 'Max iterations', placeholder: '100' },
    ],
  },
};

const FEATURE_TYPES = new Set(['integer', 'number', 'boolean', 'string']);

const EXAMPLE_TENSORS = {
  inputs: '[{"name": "input", "elementType": "float32", "shape": [null, 4]}]',
  outputs: '[{"name": "output", "elementType": "float32", "shape": [null, 1]}]',
};

const problem = (path: string, message: string) =>
  new ApiError({ status: 400, code: 'validation_failed', title: 'Check the highlighted fields', detail: '', errors: [{ path, message }] });

function TrainForm() {
  const api = useApi();
  const notify = useNotify();
  const sources = useResource<Page<SourceDto>>('sources', (a, signal) => unwrap(a.openapi.GET('/sources', { params: { query: { limit: 100 } }, signal })));
  const ready = useMemo(() => (sources.data?.data ?? []).filter((s) => s.status === 'ready'), [sources.data]);
  const [type, setType] = useState<TrainableType>('random_forest_classifier');
  const [name, setName] = useState('');
  const [description, setDescription] = useState('');
  const [sourceId, setSourceId] = useState('');
  const [target, setTarget] = useState('');
  const [features, setFeatures] = useState<string[]>([]);
  const [hyper, setHyper] = useState<Record<string, string>>({});
  const train = useAction((body: RequestBodyOf<'/models'>) => unwrap(api.openapi.POST('/models', { body })));
  const spec = TYPES[type];

  useEffect(() => {
    if (!sourceId && ready[0]) setSourceId(ready[0].id);
  }, [ready, sourceId]);

  const schema = ready.find((s) => s.id === sourceId)?.schema ?? [];
  const targets = schema.filter((c) => (spec.task === 'regression' ? c.type === 'integer' || c.type === 'number' : c.type !== 'timestamp'));
  const featureColumns = schema.filter((c) => FEATURE_TYPES.has(c.type) && c.name !== target);
  const err = train.error;

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (!name.trim()) return train.setError(problem('name', 'Name the model'));
    if (spec.task !== 'clustering' && !target) return train.setError(problem('target', 'Choose the column to predict'));
    if (features.length === 0) return train.setError(problem('features', 'Choose at least one feature'));
    const hyperparameters: Record<string, number> = {};
    for (const h of [...COMMON, ...spec.hyper]) {
      const raw = (hyper[h.name] ?? '').trim();
      if (raw === '') continue;
      const n = Number(raw);
      if (!Number.isFinite(n)) return train.setError(problem(`hyperparameters.${h.name}`, 'Enter a number'));
      hyperparameters[h.name] = n;
    }
    const body = {
      type,
      name: name.trim(),
      ...(description.trim() ? { description: description.trim() } : {}),
      sourceId,
      ...(spec.task !== 'clustering' ? { target } : {}),
      features,
      hyperparameters,
    };
    // The type and hyperparameters come from the form as entered: the server checks them, and its 400 names the fields.
    const model = await train.run(body as RequestBodyOf<'/models'>);
    if (model) {
      notify(`Training “${model.name}”`, 'info');
      navigate(`/models/${model.id}`);
    }
  };

  if (sources.data && ready.length === 0) {
    return (
      <EmptyState
        title="No ready source to train on"
        icon="🗄"
        action={
          <ButtonLink to="/sources/new" variant="primary">
            Connect a source
          </ButtonLink>
        }
      >
        A model learns from the rows of a source.
      </EmptyState>
    );
  }
  if (!sources.data) return sources.error ? <ErrorBanner error={sources.error} onRetry={() => void sources.reload()} /> : <Loading rows={4} />;

  const hyperError = err?.fieldError('hyperparameters');
  return (
    <form className="form" onSubmit={submit} noValidate>
      <ErrorBanner error={err && !err.fieldErrors.some((f) => /^(name|target|features|sourceId|description|hyperparameters)/.test(f.path)) ? err : null} />
      <fieldset className="fieldset">
        <legend className="field-label">Algorithm</legend>
        <div className="type-grid">
          {(Object.keys(TYPES) as TrainableType[]).map((t) => (
            <label key={t} className={`type-card${type === t ? ' is-checked' : ''}`}>
              <input
                type="radio"
                name="model-type"
                value={t}
                checked={type === t}
                onChange={() => {
                  setType(t);
                  setHyper({});
                  if (TYPES[t].task === 'clustering') setTarget('');
                }}
              />
              <span className="type-text">
                <span className="radio-title">{TYPES[t].label}</span>
                <span className="radio-desc">{TYPES[t].text}</span>
              </span>
            </label>
          ))}
        </div>
      </fieldset>
      <div className="form-row">
        <Field label="Name" error={err?.fieldError('name')} required>
          {(p) => (
            <input
              {...p}
              className="input"
              value={name}
              maxLength={200}
              onChange={(e) => {
                setName(e.target.value);
                train.fixField('name', e.target.value.trim() ? undefined : 'Name the model');
              }}
              placeholder="e.g. Churn predictor"
            />
          )}
        </Field>
        <Field label="Source" error={err?.fieldError('sourceId')}>
          {(p) => (
            <select
              {...p}
              className="input"
              value={sourceId}
              onChange={(e) => {
                setSourceId(e.target.value);
                setTarget('');
                setFeatures([]);
              }}
            >
              {ready.map((s) => (
                <option key={s.id} value={s.id}>
                  {s.name}
                </option>
              ))}
            </select>
          )}
        </Field>
      </div>
      {spec.task !== 'clustering' && (
        <Field
          label={spec.task === 'regression' ? 'Target (the number to predict)' : 'Target (the class to predict)'}
          error={err?.fieldError('target')}
          hint={spec.task === 'classification' ? 'Text, integer or boolean labels; at most 50 classes.' : undefined}
        >
          {(p) => (
            <select
              {...p}
              className="input"
              value={target}
              onChange={(e) => {
                setTarget(e.target.value);
                setFeatures((f) => f.filter((x) => x !== e.target.value));
                train.fixField('target', e.target.value ? undefined : 'Choose the column to predict');
              }}
            >
              <option value="">Choose a column…</option>
              {targets.map((c) => (
                <option key={c.name} value={c.name}>
                  {c.name} ({c.type})
                </option>
              ))}
            </select>
          )}
        </Field>
      )}
      <fieldset className={`fieldset${err?.fieldError('features') ? ' field-invalid' : ''}`}>
        <legend className="field-label">Features (the inputs)</legend>
        <div className="chips">
          {featureColumns.map((c) => {
            const checked = features.includes(c.name);
            return (
              <label key={c.name} className={`chip${checked ? ' is-checked' : ''}`}>
                <input
                  type="checkbox"
                  checked={checked}
                  onChange={() => {
                    const next = checked ? features.filter((f) => f !== c.name) : [...features, c.name];
                    setFeatures(next);
                    train.fixField('features', next.length === 0 ? 'Choose at least one feature' : undefined);
                  }}
                />
                {c.name}
                <span className="chip-type">{c.type}</span>
              </label>
            );
          })}
        </div>
        <p className="field-hint">Numbers and booleans are used as they are; text is one-hot encoded.</p>
        {err?.fieldError('features') && <p className="field-error">⚠ {err.fieldError('features')}</p>}
      </fieldset>
      {spec.hyper.length > 0 && (
        <div className="form-row">
          {spec.hyper.map((h) => (
            <Field key={h.name} label={h.label} hint={h.hint} error={err?.fieldError(`hyperparameters.${h.name}`)}>
              {(p) => (
                <input
                  {...p}
                  className="input"
                  inputMode="decimal"
                  placeholder={h.placeholder}
                  value={hyper[h.name] ?? ''}
                  onChange={(e) => setHyper((o) => ({ ...o, [h.name]: e.target.value }))}
                />
              )}
            </Field>
          ))}
        </div>
      )}
      <details className="query-json">
        <summary>Evaluation settings</summary>
        <div className="form-row">
          {COMMON.map((h) => (
            <Field key={h.name} label={h.label} hint={h.hint} error={err?.fieldError(`hyperparameters.${h.name}`)}>
              {(p) => (
                <input
                  {...p}
                  className="input"
                  inputMode="decimal"
                  placeholder={h.placeholder}
                  value={hyper[h.name] ?? ''}
                  onChange={(e) => setHyper((o) => ({ ...o, [h.name]: e.target.value }))}
                />
              )}
            </Field>
          ))}
        </div>
      </details>
      {hyperError && !spec.hyper.concat(COMMON).some((h) => err?.fieldError(`hyperparameters.${h.name}`)) && <p className="field-error">⚠ {hyperError}</p>}
      <Field label="Description (optional)" error={err?.fieldError('description')}>
        {(p) => <input {...p} className="input" maxLength={2000} value={description} onChange={(e) => setDescription(e.target.value)} />}
      </Field>
      <div className="form-actions">
        <ButtonLink to="/models">Cancel</ButtonLink>
        <Button type="submit" variant="primary" loading={train.pending}>
          Train model
        </Button>
      </div>
    </form>
  );
}

function bytesToBase64(bytes: Uint8Array): string {
  let binary = '';
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return window.btoa(binary);
}

function OnnxForm() {
  const api = useApi();
  const notify = useNotify();
  const [name, setName] = useState('');
  const [file, setFile] = useState<{ name: string; base64: string } | null>(null);
  const [inputs, setInputs] = useState(EXAMPLE_TENSORS.inputs);
  const [outputs, setOutputs] = useState(EXAMPLE_TENSORS.outputs);
  const upload = useAction((body: RequestBodyOf<'/models'>) => unwrap(api.openapi.POST('/models', { body })));
  const err = upload.error;

  const onFile = async (e: ChangeEvent<HTMLInputElement>) => {
    const f = e.target.files?.[0];
    if (!f) return;
    if (f.size > 7 * 1024 * 1024) return upload.setError(problem('model', 'ONNX files up to 7 MB can be uploaded'));
    setFile({ name: f.name, base64: bytesToBase64(new Uint8Array(await f.arrayBuffer())) });
    if (!name.trim()) setName(f.name.replace(/\.onnx$/i, ''));
  };

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (!name.trim()) return upload.setError(problem('name', 'Name the model'));
    if (!file) return upload.setError(problem('model', 'Choose an .onnx file'));
    let parsedInputs: unknown;
    let parsedOutputs: unknown;
    try {
      parsedInputs = JSON.parse(inputs);
    } catch {
      return upload.setError(problem('inputs', 'Not valid JSON'));
    }
    try {
      parsedOutputs = JSON.parse(outputs);
    } catch {
      return upload.setError(problem('outputs', 'Not valid JSON'));
    }
    // The tensor lists are JSON the user typed: the server checks them, and its 400 names the fields.
    const model = await upload.run({ type: 'onnx', name: name.trim(), model: file.base64, inputs: parsedInputs, outputs: parsedOutputs } as RequestBodyOf<'/models'>);
    if (model) {
      notify(`Model “${model.name}” uploaded`, 'info');
      navigate(`/models/${model.id}`);
    }
  };

  return (
    <form className="form" onSubmit={submit} noValidate>
      <ErrorBanner error={err && !err.fieldErrors.some((f) => /^(name|model|inputs|outputs)/.test(f.path)) ? err : null} />
      <Field label="ONNX file" hint={file ? `${file.name} selected` : 'Up to 7 MB; it runs with ONNX Runtime on the CPU.'} error={err?.fieldError('model')} required>
        {(p) => <input {...p} type="file" accept=".onnx" className="file-input" onChange={onFile} />}
      </Field>
      <Field label="Name" error={err?.fieldError('name')} required>
        {(p) => <input {...p} className="input" value={name} maxLength={200} onChange={(e) => setName(e.target.value)} />}
      </Field>
      <div className="form-row">
        <Field label="Inputs (tensor specs, JSON)" hint="Name, element type and shape of each input; null for a free dimension." error={err?.fieldError('inputs')}>
          {(p) => <textarea {...p} className="input textarea mono" rows={4} value={inputs} onChange={(e) => setInputs(e.target.value)} spellCheck={false} />}
        </Field>
        <Field label="Outputs (tensor specs, JSON)" error={err?.fieldError('outputs')}>
          {(p) => <textarea {...p} className="input textarea mono" rows={4} value={outputs} onChange={(e) => setOutputs(e.target.value)} spellCheck={false} />}
        </Field>
      </div>
      <div className="form-actions">
        <ButtonLink to="/models">Cancel</ButtonLink>
        <Button type="submit" variant="primary" loading={upload.pending}>
          Upload model
        </Button>
      </div>
    </form>
  );
}

export function TrainModelPage() {
  useDocumentTitle('New model');
  const [mode, setMode] = useState<'train' | 'onnx'>('train');
  return (
    <>
      <PageHeader
        title="New model"
        back={{ to: '/models', label: 'Models' }}
        description="Train a model on one of your sources, or bring your own ONNX model. Training runs in the background; the model page shows its progress and evaluation."
      />
      <div className="segmented" role="group" aria-label="How to add the model">
        <button type="button" aria-pressed={mode === 'train'} className={mode === 'train' ? 'is-active' : ''} onClick={() => setMode('train')}>
          Train from a source
        </button>
        <button type="button" aria-pressed={mode === 'onnx'} className={mode === 'onnx' ? 'is-active' : ''} onClick={() => setMode('onnx')}>
          Upload ONNX
        </button>
      </div>
      <Card>{mode === 'train' ? <TrainForm /> : <OnnxForm />}</Card>
    </>
  );
}
