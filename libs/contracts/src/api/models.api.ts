import { z } from 'zod';
import { idSchema } from '../ids.ts';
import { isoDate, listOf, namedResourceSchema } from './common.ts';

export const MODEL_KINDS = ['builtin', 'trained', 'onnx'] as const;
export const MODEL_STATUSES = ['training', 'ready', 'failed'] as const;
export const MAX_PREDICT_BATCH = 1000;
export const MAX_SERIES_LENGTH = 10_000;
/** Total series values in one predict request (all inputs together), so one request cannot hog a process. */
export const MAX_BATCH_SERIES_VALUES = 200_000;

/** Model types trained from a data source (`POST /models`). */
export const TRAINABLE_MODEL_TYPES = ['linear_regression', 'logistic_regression', 'random_forest_classifier', 'random_forest_regressor', 'kmeans'] as const;
export const MAX_TRAINING_FEATURES = 50;
/**
 * The decoded ONNX file's size cap. Its base64 text (4/3 of it) plus the rest of the body stays under the
 * 10 MiB request body limit of the gateway and the services, and the file fits one MongoDB document.
 */
export const MAX_ONNX_MODEL_BYTES = 7 * 1024 * 1024;
export const MAX_ONNX_MODEL_BASE64_CHARS = Math.ceil(MAX_ONNX_MODEL_BYTES / 3) * 4;
/** Tensor element types an ONNX model's inputs and outputs may have (as onnxruntime names them). */
export const ONNX_ELEMENT_TYPES = ['float32', 'float64', 'int8', 'uint8', 'int16', 'uint16', 'int32', 'uint32', 'int64', 'uint64', 'bool'] as const;

export const featureSchema = z
  .object({
    name: z.string(),
    type: z.string(),
    description: z.string(),
    categories: z
      .array(z.string())
      .optional()
      .describe(
        'Ready trained models, string features: the categories the model learned, most frequent first. Any other value (and null) is encoded like an unseen one, and its prediction lists it in `unknownCategories`.',
      ),
    range: z
      .object({ min: z.number().nullable(), max: z.number().nullable(), mean: z.number().nullable() })
      .optional()
      .describe('Ready trained models, numeric and boolean features: the training values’ minimum, maximum and mean (null without values; a missing input takes the mean).'),
  })
  .meta({ id: 'ModelFeature' });

export const tensorSpecSchema = z
  .strictObject({
    name: z.string().min(1).max(256),
    elementType: z.enum(ONNX_ELEMENT_TYPES),
    shape: z
      .array(z.union([z.number().int().min(1).max(1_000_000), z.string().min(1).max(64), z.null()]))
      .min(1)
      .max(4)
      .describe('One entry per dimension: a fixed size, or a name or null for a dimension the caller chooses (e.g. the batch).'),
  })
  .meta({ id: 'TensorSpec' });
export type TensorSpec = z.infer<typeof tensorSpecSchema>;

const modelTraining = z
  .object({
    sourceId: z.string(),
    target: z.string().nullable(),
    features: z.array(z.string()),
    hyperparameters: z.record(z.string(), z.unknown()).describe('Every hyperparameter used, defaults filled in.'),
    rows: z
      .object({
        available: z.number().int().describe('Rows of the source with a target value.'),
        used: z.number().int().describe('Rows read (a deterministic sample when over the training row cap).'),
        train: z.number().int(),
        test: z.number().int().describe('Held-out rows the evaluation is computed on.'),
      })
      .nullable(),
    startedAt: isoDate,
    finishedAt: isoDate.nullable(),
    durationMs: z.number().nullable(),
  })
  .meta({ id: 'ModelTraining' });

const onnxInfo = z
  .object({
    inputs: z.array(tensorSpecSchema),
    outputs: z.array(tensorSpecSchema),
    sizeBytes: z.number().int(),
    sha256: z.string(),
  })
  .meta({ id: 'OnnxModelInfo' });

export const modelSchema = namedResourceSchema
  .extend({
    type: z.string(),
    kind: z.enum(MODEL_KINDS),
    status: z.enum(MODEL_STATUSES),
    version: z.number().int(),
    description: z.string(),
    features: z.array(featureSchema),
    createdAt: isoDate,
    updatedAt: isoDate.optional(),
    error: z.string().nullable().optional().describe('Why training failed (failed models only).'),
    training: modelTraining.optional().describe('Trained models: what they were trained on and how.'),
    onnx: onnxInfo.optional().describe('ONNX models: the declared (and verified) inputs and outputs.'),
    parameters: z.record(z.string(), z.unknown()).nullable().optional().describe('Ready trained models, on GET /models/{id} only: coefficients, centroids or feature importances.'),
    aliases: z
      .record(z.string(), z.number().int())
      .optional()
      .describe('Own models: alias → version. `production` always exists and is what predict uses unless a version or alias is named.'),
    shadowShare: z.number().optional().describe('Own models: share of production predictions copied to the candidate version (0 = none).'),
  })
  .meta({ id: 'Model' });
export type ModelDto = z.infer<typeof modelSchema>;
export const modelListSchema = listOf(modelSchema).meta({ id: 'ModelList' });

const columnName = z.string().min(1).max(128);
const modelName = z.string().trim().min(1).max(200);
const description = z.string().max(2000).optional();
const seedAndSplit = {
  seed: z.number().int().min(0).max(2_147_483_647).default(42).describe('Seeds the split, the sampling and the algorithm.'),
  testFraction: z.number().min(0.05).max(0.5).default(0.2).describe('Share of rows held out for the evaluation.'),
  maxCategories: z.number().int().min(1).max(100).default(20).describe('Most frequent categories one-hot encoded per string feature; the rest share one column.'),
};
export const linearHyperparameters = z.strictObject({ ...seedAndSplit });
export const logisticHyperparameters = z.strictObject({
  ...seedAndSplit,
  learningRate: z.number().gt(0).max(10).default(0.5).describe('Gradient ascent step on standardised features (mean gradient).'),
  maxIterations: z.number().int().min(1).max(5000).default(300),
});
export const forestHyperparameters = z.strictObject({
  ...seedAndSplit,
  nEstimators: z.number().int().min(1).max(200).default(25),
  maxDepth: z.number().int().min(1).max(20).default(8),
  maxFeatures: z.number().gt(0).max(1).default(0.8).describe('Share of the encoded features each tree sees.'),
  minSamplesLeaf: z.number().int().min(1).max(1000).default(3),
  sampleRows: z.number().int().min(50).max(10_000).default(2000).describe('Training rows the forest is fitted on (its cost grows with their square).'),
});
export const kmeansHyperparameters = z.strictObject({
  ...seedAndSplit,
  k: z.number().int().min(2).max(50).default(3),
  maxIterations: z.number().int().min(1).max(1000).default(100),
});

const trainingFields = {
  name: modelName,
  description,
  sourceId: idSchema('src'),
  features: z
    .array(columnName)
    .min(1)
    .max(MAX_TRAINING_FEATURES)
    .refine((f) => new Set(f).size === f.length, { message: 'features must be distinct' })
    .describe('Columns of the source used as inputs: numeric, boolean or string (one-hot encoded).'),
};
// Every hyperparameter has a default, so an absent object reads as {} with all defaults filled in.
const supervised = <T extends string, H extends z.ZodType>(type: T, hyperparameters: H, targetHelp: string) =>
  z.strictObject({ type: z.literal(type), ...trainingFields, target: columnName.describe(targetHelp), hyperparameters: hyperparameters.prefault({} as z.input<H>) });
const regressionTarget = 'The numeric column to predict.';
const classTarget = 'The column holding the class labels (string, integer or boolean; at most 50 classes).';

export const createModelBody = z
  .discriminatedUnion('type', [
    supervised('linear_regression', linearHyperparameters, regressionTarget),
    supervised('logistic_regression', logisticHyperparameters, classTarget),
    supervised('random_forest_classifier', forestHyperparameters, classTarget),
    supervised('random_forest_regressor', forestHyperparameters, regressionTarget),
    z.strictObject({ type: z.literal('kmeans'), ...trainingFields, hyperparameters: kmeansHyperparameters.prefault({}) }),
    z.strictObject({
      type: z.literal('onnx'),
      name: modelName,
      description,
      model: z
        .string()
        .min(4)
        .max(MAX_ONNX_MODEL_BASE64_CHARS)
        .regex(/^[A-Za-z0-9+/]+={0,2}$/, 'must be base64')
        .describe(`The .onnx file, base64-encoded; at most ${MAX_ONNX_MODEL_BYTES} bytes decoded.`),
      inputs: z.array(tensorSpecSchema).min(1).max(16),
      outputs: z.array(tensorSpecSchema).min(1).max(16),
    }),
  ])
  .meta({
    id: 'CreateModel',
    examples: [
      { type: 'random_forest_classifier', name: 'Churn', sourceId: 'src_01JAAAAAAAAAAAAAAAAAAAAAAA', target: 'churned', features: ['tenure', 'plan', 'monthlySpend'] },
      { type: 'kmeans', name: 'Segments', sourceId: 'src_01JAAAAAAAAAAAAAAAAAAAAAAA', features: ['recency', 'frequency', 'monetary'], hyperparameters: { k: 4 } },
    ],
  });
export type CreateModelBody = z.infer<typeof createModelBody>;
export type TrainModelBody = Exclude<CreateModelBody, { type: 'onnx' }>;
export type UploadOnnxBody = Extract<CreateModelBody, { type: 'onnx' }>;

/** An alias name: lower case, digits, `_` and `-` (it is also a MongoDB field name, so no dots or `$`). */
export const aliasName = z
  .string()
  .regex(/^[a-z][a-z0-9_-]{0,39}$/, 'must start with a letter and hold only a-z, 0-9, _ and - (at most 40 characters)')
  .describe('An alias such as production or candidate.');
export const MAX_MODEL_ALIASES = 20;
export const MAX_MODEL_VERSION = 1_000_000;
const versionNumber = z.number().int().min(1).max(MAX_MODEL_VERSION);

/** Each input's shape is the model's own; the model validates it and names the bad field. */
export const predictBody = z
  .strictObject({
    inputs: z.array(z.record(z.string(), z.unknown())).min(1).max(MAX_PREDICT_BATCH),
    version: versionNumber.optional().describe('The version to run; by default the one the `production` alias points at.'),
    alias: aliasName.optional().describe('The alias whose version runs (default `production`); not together with `version`.'),
    explain: z
      .boolean()
      .optional()
      .describe(
        'Adds an `explanation` to each prediction. Linear regression: `contributions` per feature with baseValue + Σ contributions = the prediction exactly. ' +
          'Logistic regression: the same in log-odds space (`space: "log_odds"`, of the predicted `class`; its probability is sigmoid(value) normalised over the classes). ' +
          'Contributions are measured from numbers and booleans at their training mean and categories at the most frequent one. ' +
          'Random forests (`method: "tree_path"`): along each tree’s decision path the change in the node’s expected training value is credited to the split’s feature, ' +
          'averaged over the trees, so baseValue + Σ contributions = the prediction (regressors) or the predicted class’s probability (classifiers) exactly. ' +
          'Forecast: each forecast = level + trend + season, with the in-sample residuals. Other models answer 400.',
      ),
  })
  .refine((b) => b.version === undefined || b.alias === undefined, { message: 'name a version or an alias, not both', path: ['alias'] })
  .meta({
    id: 'PredictRequest',
    examples: [{ inputs: [{ series: [12, 14, 13, 15, 17, 16, 18, 20], horizon: 3, seasonLength: 4 }] }],
  });
export type PredictBody = z.infer<typeof predictBody>;

export const predictionSchema = z
  .object({
    id: z.string(),
    modelId: z.string(),
    modelVersion: z.number().int().describe('The version that answered.'),
    alias: z.string().nullable().describe('The alias that chose the version (production by default); null when the request named a version.'),
    predictions: z
      .array(z.record(z.string(), z.unknown()))
      .describe(
        "One output per input, in the inputs' order; its fields are the model's: regressors {prediction}, classifiers " +
          '{prediction, probabilities: {label: p}}, k-means {cluster, distance}, ONNX models one field per output. ' +
          'Trained models add `unknownCategories: {feature: value}` to an input whose string feature holds a value outside the feature’s `categories` (unseen in training, or too rare to be kept): the model answers as for any unseen value, so treat the answer with care.',
      ),
    latencyMs: z.number().describe('Time spent in the model itself, in milliseconds.'),
  })
  .meta({ id: 'Prediction' });
export type PredictionDto = z.infer<typeof predictionSchema>;

const servingWindow = z.object({
  count: z.number().int().describe('Predict requests for this model in the window, failed ones included.'),
  errors: z.number().int().describe('Predict requests that failed (invalid inputs or a model error).'),
  errorRate: z.number().describe('errors / count, 0 when there were no requests.'),
  inputs: z.number().int().describe('Inputs predicted by the successful requests (a batch counts each input).'),
  latencyMs: z
    .object({ p50: z.number().nullable(), p95: z.number().nullable(), p99: z.number().nullable() })
    .describe('Percentiles of the model-call time of successful requests; null when there were none.'),
  sampled: z.boolean().describe('True when the percentiles come from only the most recent requests of a very busy window.'),
});

const featureDrift = z.object({
  feature: z.string(),
  kind: z.enum(['numeric', 'boolean', 'categorical']),
  values: z.number().int().describe('Logged inputs with a value for this feature.'),
  psi: z.number().nullable().describe('Population stability index against the training data; null with too few values.'),
  status: z.enum(['stable', 'moderate', 'significant', 'insufficient_data']).describe('PSI below 0.1 stable, below 0.25 moderate, else significant.'),
  bins: z
    .array(z.union([z.number(), z.string()]))
    .describe('Numeric: upper edges of the training-decile bins (the last bin is above them). Categorical: the categories, then (other).'),
  expected: z.array(z.number()).describe('Share of training values per bin.'),
  actual: z.array(z.number()).nullable().describe('Share of logged input values per bin.'),
});

export const metricsSchema = z
  .object({
    modelId: z.string(),
    modelVersion: z.number().int().describe('The version these metrics are of (serving counts and drift are per version).'),
    evaluation: z
      .record(z.string(), z.unknown())
      .nullable()
      .describe(
        'Held-out evaluation. Trained models: kind holdout, computed on the rows held out of training (regression mae, rmse, r2; ' +
          'classification accuracy, precision, recall, f1 (macro), rocAuc, confusionMatrix; clustering inertia, silhouette). ' +
          'Built-in models: a fixed backtest on a synthetic series (kind synthetic_backtest). ONNX models: null.',
      ),
    serving: z.object({ lastHour: servingWindow, lastDay: servingWindow }),
    shadow: z
      .object({
        window: z.literal('P1D'),
        comparedWith: z.number().int().nullable().describe('The production version of the newest shadowed request.'),
        requests: z.number().int().describe('Live requests copied to this version.'),
        errors: z.number().int().describe('Copies this version failed on.'),
        inputs: z.number().int(),
        agreement: z.number().nullable().describe('Classifiers and k-means: share of inputs where this version gave the same answer as production.'),
        meanAbsoluteDifference: z.number().nullable().describe('Regressors: mean |this version − production| over the inputs (no ground truth is known at prediction time).'),
        latencyMs: z.object({ p50: z.number().nullable(), p95: z.number().nullable(), p99: z.number().nullable() }).describe('This version’s model time on the copies.'),
        productionLatencyMs: z
          .object({ p50: z.number().nullable(), p95: z.number().nullable(), p99: z.number().nullable() })
          .describe('Production’s model time on the same requests.'),
        sampled: z.boolean(),
      })
      .nullable()
      .describe('Shadow traffic of the last day, when this version received copies of live predictions (as `candidate`); null otherwise.'),
    drift: z
      .object({
        window: z.literal('P1D'),
        inputs: z.number().int().describe('Logged inputs compared (a capped sample of each request, newest requests first).'),
        sampled: z.boolean().describe('True when the cap on compared inputs was reached.'),
        features: z.array(featureDrift),
      })
      .nullable()
      .describe('Input drift of the last day against the training data; trained models only.'),
    generatedAt: isoDate,
  })
  .meta({ id: 'ModelMetrics' });
export type MetricsDto = z.infer<typeof metricsSchema>;
export type FeatureDriftDto = z.infer<typeof featureDrift>;

/** `GET /models/{id}/metrics`: which version (by default the one `production` points at). */
export const metricsQuerySchema = z.strictObject({
  version: z.coerce.number().int().min(1).max(MAX_MODEL_VERSION).optional(),
  alias: aliasName.optional().describe('Not together with version.'),
});

export const modelVersionSchema = z
  .object({
    version: z.number().int(),
    status: z.enum(MODEL_STATUSES),
    error: z.string().nullable(),
    aliases: z.array(z.string()).describe('The aliases pointing at this version.'),
    training: modelTraining.nullable().describe('Trained models: what this version was trained on and how.'),
    evaluation: z.record(z.string(), z.unknown()).nullable().describe('This version’s held-out evaluation (as in the metrics).'),
    createdAt: isoDate,
  })
  .meta({ id: 'ModelVersion' });
export type ModelVersionDto = z.infer<typeof modelVersionSchema>;
export const modelVersionListSchema = z.object({ data: z.array(modelVersionSchema).describe('Newest version first.') }).meta({ id: 'ModelVersionList' });

/** Retraining: the same source, target and features; hyperparameters replace the previous ones when given. */
export const retrainModelBody = z
  .strictObject({
    hyperparameters: z.record(z.string(), z.unknown()).optional().describe("The model type's hyperparameters (defaults filled in); the previous version's when left out."),
  })
  .meta({ id: 'RetrainModel' });
export type RetrainModelBody = z.infer<typeof retrainModelBody>;

/** Moves (a version number) or removes (null) aliases, all in one atomic write. */
export const updateAliasesBody = z
  .strictObject({
    aliases: z
      .record(aliasName, versionNumber.nullable())
      .refine((a) => Object.keys(a).length <= MAX_MODEL_ALIASES, { message: `name at most ${MAX_MODEL_ALIASES} aliases` })
      .refine((a) => a.production !== null, { message: 'production cannot be removed; point it at another version', path: ['production'] })
      .default({}),
    shadowShare: z
      .number()
      .min(0)
      .max(1)
      .optional()
      .describe(
        'Share (0 to 1) of the predictions answered by `production` that are also sent to the `candidate` version in the background: its answers are recorded and compared in the metrics, never returned.',
      ),
  })
  .refine((b) => Object.keys(b.aliases).length > 0 || b.shadowShare !== undefined, { message: 'name at least one alias, or a shadowShare', path: ['aliases'] })
  .meta({ id: 'UpdateModelAliases', examples: [{ aliases: { production: 2, candidate: null } }, { aliases: { candidate: 3 }, shadowShare: 0.1 }] });
export type UpdateAliasesBody = z.infer<typeof updateAliasesBody>;
export const modelAliasesSchema = z
  .object({ modelId: z.string(), aliases: z.record(z.string(), z.number().int()), shadowShare: z.number().describe('Share of production predictions copied to candidate.') })
  .meta({ id: 'ModelAliases' });
