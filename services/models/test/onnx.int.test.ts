import { createHash } from 'node:crypto';
import protobuf from 'protobufjs';
import { MAX_ONNX_MODEL_BASE64_CHARS, metricsSchema, newId, predictionSchema, TOPICS, type DomainEvent } from '@dap/contracts';
import { serviceClient, serviceTestEnv, uniqueSuffix, waitFor } from '@dap/testing';
import { startEventTap, type EventTap } from '@dap/testing/event-feed';
import { loadModelsConfig, startModels, type RunningModels } from '../src/index.ts';
import { expectCreated } from './harness.ts';

/**
 * An ONNX model written by this test: Y = X·W + B (MatMul then Add, opset 13), encoded as an ONNX protobuf
 * with the subset of onnx.proto below (field numbers as in onnx/onnx.proto), then uploaded and served.
 */
const ONNX_SUBSET = `
syntax = "proto3";
package onnx;
message OperatorSetIdProto { string domain = 1; int64 version = 2; }
message TensorProto { repeated int64 dims = 1; int32 data_type = 2; repeated float float_data = 4; string name = 8; }
message Dimension { oneof value { int64 dim_value = 1; string dim_param = 2; } }
message TensorShapeProto { repeated Dimension dim = 1; }
message TensorTypeProto { int32 elem_type = 1; TensorShapeProto shape = 2; }
message TypeProto { oneof value { TensorTypeProto tensor_type = 1; } }
message ValueInfoProto { string name = 1; TypeProto type = 2; }
message NodeProto { repeated string input = 1; repeated string output = 2; string name = 3; string op_type = 4; }
message GraphProto { repeated NodeProto node = 1; string name = 2; repeated TensorProto initializer = 5; repeated ValueInfoProto input = 11; repeated ValueInfoProto output = 12; }
message ModelProto { int64 ir_version = 1; string producer_name = 2; GraphProto graph = 7; repeated OperatorSetIdProto opset_import = 8; }
`;
const FLOAT = 1; // TensorProto.DataType.FLOAT
const W = [
  [1, -2],
  [0.5, 3],
  [-1, 0.25],
];
const B = [0.5, -1];

function linearOnnx(): Uint8Array {
  const Model = protobuf.parse(ONNX_SUBSET).root.lookupType('onnx.ModelProto');
  const valueInfo = (name: string, dims: (number | string)[]) => ({
    name,
    type: { tensorType: { elemType: FLOAT, shape: { dim: dims.map((d) => (typeof d === 'number' ? { dimValue: d } : { dimParam: d })) } } },
  });
  const message = Model.fromObject({
    irVersion: 7,
    producerName: 'dap-models-test',
    opsetImport: [{ domain: '', version: 13 }],
    graph: {
      name: 'linear',
      node: [
        { input: ['X', 'W'], output: ['XW'], name: 'matmul', opType: 'MatMul' },
        { input: ['XW', 'B'], output: ['Y'], name: 'add', opType: 'Add' },
      ],
      initializer: [
        { name: 'W', dims: [3, 2], dataType: FLOAT, floatData: W.flat() },
        { name: 'B', dims: [2], dataType: FLOAT, floatData: B },
      ],
      input: [valueInfo('X', ['N', 3])],
      output: [valueInfo('Y', ['N', 2])],
    },
  });
  return Model.encode(message).finish();
}

/** The expected answer, computed here in float64 (the model computes in float32). */
const expected = (x: number[]) => [0, 1].map((j) => x.reduce((s, v, i) => s + v * W[i]![j]!, 0) + B[j]!);

const suffix = uniqueSuffix();
let svc: RunningModels;
let tap: EventTap;
let seen: DomainEvent[];
const accountA = newId('acct');
const as = (accountId: string) => serviceClient(() => svc.url, accountId);
const a = as(accountA);

const bytes = linearOnnx();
const upload = {
  type: 'onnx',
  name: 'linear',
  model: Buffer.from(bytes).toString('base64'),
  inputs: [{ name: 'X', elementType: 'float32', shape: ['N', 3] }],
  outputs: [{ name: 'Y', elementType: 'float32', shape: ['N', 2] }],
};

beforeAll(async () => {
  svc = await startModels(loadModelsConfig(serviceTestEnv(`models_onnx_${suffix}`, `t${suffix}.`, { OUTBOX_INTERVAL_MS: '200', TRAIN_WORKERS: '0' })));
  tap = await startEventTap(`t${suffix}.`, 'onnx-test');
  seen = (await tap.watch(TOPICS.models)).events;
});

afterAll(async () => {
  await tap?.stop();
  await svc?.mongo.db.dropDatabase().catch(() => {});
  await svc?.stop();
});

describe('ONNX models', () => {
  let id: string;

  it('uploads a model verified by loading it (201, ready, with model.ready in the same write)', async () => {
    const res = await a.post('/models', upload);
    id = expectCreated(res, 201);
    expect(res.body).toMatchObject({ kind: 'onnx', type: 'onnx', status: 'ready', version: 1, name: 'linear' });
    expect(res.body.onnx).toEqual({ inputs: upload.inputs, outputs: upload.outputs, sizeBytes: bytes.byteLength, sha256: createHash('sha256').update(bytes).digest('hex') });
    expect(res.body.features).toEqual([{ name: 'X', type: 'float32[N, 3]', description: expect.any(String) }]);
    const event = await waitFor(() => seen.find((e) => e.type === 'model.ready' && e.subject === id), { what: 'model.ready on Kafka' });
    expect(event).toMatchObject({ accountId: accountA, data: { id, name: 'linear', type: 'onnx' } });
  });

  it('predicts Y = X·W + B through onnxruntime, for a batch and for a single example', async () => {
    const res = await a.post(`/models/${id}/predict`, {
      inputs: [
        {
          X: [
            [1, 2, 3],
            [4, 5, 6],
          ],
        },
        { X: [0.5, -1, 2] },
      ],
    });
    expect(res.status).toBe(200);
    expect(predictionSchema.strict().safeParse(res.body).success).toBe(true);
    expect(res.body).toMatchObject({ modelId: id, modelVersion: 1 });
    const [batch, single] = res.body.predictions;
    expect(batch.Y).toHaveLength(2);
    [
      [1, 2, 3],
      [4, 5, 6],
    ].forEach((x, r) => expected(x).forEach((v, j) => expect(batch.Y[r][j]).toBeCloseTo(v, 4)));
    expect(single.Y).toHaveLength(1); // the leading free dimension was added: a batch of one
    expected([0.5, -1, 2]).forEach((v, j) => expect(single.Y[0][j]).toBeCloseTo(v, 4));
  });

  it.each([
    ['a wrong fixed dimension', { inputs: [{ X: [[1, 2]] }] }, 'inputs.0.X'],
    [
      'a ragged tensor',
      {
        inputs: [
          {
            X: [
              [1, 2, 3],
              [4, 5],
            ],
          },
        ],
      },
      'inputs.0.X.1',
    ],
    ['a string value', { inputs: [{ X: [['a', 2, 3]] }] }, 'inputs.0.X.0.0'],
    ['an unknown input name', { inputs: [{ Z: [[1, 2, 3]] }] }, 'inputs.0.Z'],
    ['a missing input', { inputs: [{}] }, 'inputs.0.X'],
    ['too many dimensions', { inputs: [{ X: [[[1, 2, 3]]] }] }, 'inputs.0.X'],
    ['a scalar', { inputs: [{ X: 3 }] }, 'inputs.0.X'],
    ['an empty batch', { inputs: [] }, 'inputs'],
  ])('answers 400 for %s, naming the field', async (_what, body, path) => {
    const res = await a.post(`/models/${id}/predict`, body);
    expect(res.status).toBe(400);
    expect(res.body.errors.map((e: { path: string }) => e.path)).toContain(path);
  });

  it('shows serving metrics, and no held-out evaluation or drift', async () => {
    const res = await a.get(`/models/${id}/metrics`);
    expect(res.status).toBe(200);
    expect(metricsSchema.strict().safeParse(res.body).success).toBe(true);
    expect(res.body).toMatchObject({ modelId: id, evaluation: null, drift: null });
    expect(res.body.serving.lastDay.count).toBeGreaterThanOrEqual(2);
  });

  it.each([
    ['bytes that are not a model', { ...upload, model: Buffer.from('definitely not a protobuf').toString('base64') }, 'model', /onnxruntime could not load the model/],
    ['text that is not base64', { ...upload, model: 'not base64!' }, 'model', /base64/],
    ['a wrong input name', { ...upload, inputs: [{ ...upload.inputs[0], name: 'x' }] }, 'inputs.0.name', /no input "x"; its inputs are "X"/],
    ['a wrong element type', { ...upload, inputs: [{ ...upload.inputs[0], elementType: 'float64' }] }, 'inputs.0.elementType', /the model says float32/],
    ['a wrong fixed dimension', { ...upload, inputs: [{ ...upload.inputs[0], shape: ['N', 4] }] }, 'inputs.0.shape.1', /fixes this dimension at 3/],
    ['a wrong rank', { ...upload, outputs: [{ ...upload.outputs[0], shape: ['N'] }] }, 'outputs.0.shape', /shape is \[N, 2\]/],
    ['an undeclared output', { ...upload, outputs: [{ name: 'Z', elementType: 'float32', shape: ['N', 2] }] }, 'outputs', /"Y" is missing/],
    ['no inputs', { ...upload, inputs: [] }, 'inputs', /./],
  ])('refuses an upload with %s (400, naming the field)', async (_what, body, path, message) => {
    const res = await a.post('/models', body);
    expect(res.status).toBe(400);
    const error = res.body.errors.find((e: { path: string }) => e.path === path);
    expect(error).toBeDefined();
    expect(error.message).toMatch(message);
  });

  it(`refuses a file over ${MAX_ONNX_MODEL_BASE64_CHARS} base64 characters`, async () => {
    const res = await a.post('/models', { ...upload, model: 'A'.repeat(MAX_ONNX_MODEL_BASE64_CHARS + 4) });
    expect(res.status).toBe(400);
    expect(res.body.errors.map((e: { path: string }) => e.path)).toContain('model');
  });

  it('keeps it from other accounts, and deletes it', async () => {
    const b = as(newId('acct'));
    expect((await b.get(`/models/${id}`)).status).toBe(404);
    expect((await b.post(`/models/${id}/predict`, { inputs: [{ X: [1, 2, 3] }] })).status).toBe(404);
    expect((await a.del(`/models/${id}`)).status).toBe(204);
    expect((await a.post(`/models/${id}/predict`, { inputs: [{ X: [1, 2, 3] }] })).status).toBe(404);
  });
});
