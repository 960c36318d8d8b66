import { createHash } from 'node:crypto';
import { ONNX_ELEMENT_TYPES, type TensorSpec } from '@dap/contracts';
import type { FieldError } from '@dap/errors';
import type { OnnxInspection, TensorInfo } from './onnx-engine.ts';
import type { OnnxInfo } from '../model.ts';

const shapeText = (shape: readonly (number | string | null)[]) => `[${shape.map((d) => (d === null ? '?' : d)).join(', ')}]`;

/**
 * Compares what the caller declared with what onnxruntime found in the file: the same input and output
 * names, element types, ranks, and every dimension the model fixes. One error per mismatch, by path.
 */
export function checkDeclaredIo(declared: { inputs: TensorSpec[]; outputs: TensorSpec[] }, actual: OnnxInspection): FieldError[] {
  const errors: FieldError[] = [];
  for (const side of ['inputs', 'outputs'] as const) {
    const found = new Map<string, TensorInfo>(actual[side].map((t) => [t.name, t]));
    const names = actual[side].map((t) => JSON.stringify(t.name)).join(', ');
    const seen = new Set<string>();
    declared[side].forEach((d, i) => {
      const path = `${side}.${i}`;
      if (seen.has(d.name)) return void errors.push({ path: `${path}.name`, message: `${JSON.stringify(d.name)} is declared twice` });
      seen.add(d.name);
      const a = found.get(d.name);
      if (!a) return void errors.push({ path: `${path}.name`, message: `the model has no ${side.slice(0, -1)} ${JSON.stringify(d.name)}; its ${side} are ${names}` });
      if (a.type === null) return void errors.push({ path, message: 'this is not a tensor in the model; only tensor inputs and outputs are supported' });
      if (!(ONNX_ELEMENT_TYPES as readonly string[]).includes(a.type))
        return void errors.push({ path: `${path}.elementType`, message: `the model's element type ${a.type} is not supported` });
      if (a.type !== d.elementType) errors.push({ path: `${path}.elementType`, message: `the model says ${a.type}` });
      if (!a.shape.length) return; // the model leaves the shape open: the declaration decides
      if (a.shape.length !== d.shape.length) return void errors.push({ path: `${path}.shape`, message: `the model's shape is ${shapeText(a.shape)}` });
      a.shape.forEach((dim, j) => {
        if (typeof dim === 'number' && d.shape[j] !== dim) errors.push({ path: `${path}.shape.${j}`, message: `the model fixes this dimension at ${dim}` });
      });
    });
    for (const t of actual[side]) {
      if (!seen.has(t.name))
        errors.push({ path: side, message: `every ${side.slice(0, -1)} of the model must be declared; ${JSON.stringify(t.name)} is missing (the model's ${side} are ${names})` });
    }
  }
  return errors;
}

export function onnxInfoOf(declared: { inputs: TensorSpec[]; outputs: TensorSpec[] }, bytes: Uint8Array): OnnxInfo {
  return { inputs: declared.inputs, outputs: declared.outputs, sizeBytes: bytes.byteLength, sha256: createHash('sha256').update(bytes).digest('hex') };
}

export function featuresOf(inputs: readonly TensorSpec[]) {
  return inputs.map((t) => ({
    name: t.name,
    type: `${t.elementType}${shapeText(t.shape)}`,
    description: `A ${t.elementType} tensor shaped ${shapeText(t.shape)} as nested arrays (a single example may leave out a leading free dimension).`,
  }));
}
