import fc from 'fast-check';

/**
 * fast-check arbitraries from the JSON Schemas (2020-12) of the OpenAPI document: values that the document
 * says are valid, and mutations of them that it says are not. Sizes are kept small, and every string that
 * names a network target (url, host, …) points at a loopback receiver, so fuzzing never sends traffic
 * anywhere else.
 */
type Schema = Record<string, unknown>;

export interface GenContext {
  components: Record<string, Schema>;
  /** Loopback URL used for every url/uri field. */
  loopbackUrl: string;
  /** Known ids by field name (e.g. sourceId → an existing source), used half of the time. */
  knownIds: Record<string, string>;
}

const MAX_DEPTH = 5;

function resolve(schema: Schema, ctx: GenContext): Schema {
  const ref = schema.$ref;
  if (typeof ref !== 'string') return schema;
  const name = ref.replace('#/components/schemas/', '');
  const target = ctx.components[name];
  if (!target) throw new Error(`unresolvable $ref ${ref}`);
  const { $ref: _r, ...rest } = schema;
  return { ...resolve(target, ctx), ...rest };
}

const safeKey = fc.stringMatching(/^[a-z][a-zA-Z0-9_]{0,11}$/);

function stringOf(schema: Schema, ctx: GenContext, key: string): fc.Arbitrary<string> {
  const min = typeof schema.minLength === 'number' ? schema.minLength : 0;
  const max = Math.max(min, Math.min(typeof schema.maxLength === 'number' ? schema.maxLength : 24, min + 24));
  if (/url|uri|endpoint/i.test(key) || schema.format === 'uri') return fc.constant(ctx.loopbackUrl);
  if (/host/i.test(key)) return fc.constant('127.0.0.1');
  if (schema.format === 'email') return fc.emailAddress().filter((e) => e.length <= max || max < 6);
  if (schema.format === 'date-time') return fc.date({ min: new Date('2000-01-01'), max: new Date('2100-01-01'), noInvalidDate: true }).map((d) => d.toISOString());
  if (typeof schema.pattern === 'string') {
    const known = ctx.knownIds[key];
    const matching = fc.stringMatching(new RegExp(schema.pattern)).filter((s) => s.length >= min && s.length <= (typeof schema.maxLength === 'number' ? schema.maxLength : 10_000));
    return known ? fc.oneof(fc.constant(known), matching) : matching;
  }
  const known = ctx.knownIds[key];
  const plain = fc.string({ minLength: min, maxLength: max, unit: 'grapheme-ascii' });
  return known ? fc.oneof(fc.constant(known), plain) : plain;
}

function numberOf(schema: Schema, integer: boolean): fc.Arbitrary<number> {
  const num = (k: string) => (typeof schema[k] === 'number' ? (schema[k] as number) : undefined);
  let min = num('minimum') ?? (num('exclusiveMinimum') !== undefined ? num('exclusiveMinimum')! + (integer ? 1 : 1e-9) : undefined);
  let max = num('maximum') ?? (num('exclusiveMaximum') !== undefined ? num('exclusiveMaximum')! - (integer ? 1 : 1e-9) : undefined);
  min ??= integer ? -1000 : -1e6;
  max ??= integer ? 100_000 : 1e6;
  if (integer) return fc.integer({ min: Math.ceil(Math.max(min, -(2 ** 31))), max: Math.floor(Math.min(max, 2 ** 31)) });
  return fc.double({ min, max, noNaN: true, noDefaultInfinity: true });
}

/** Values valid for `schema` (to the extent the schema says what is valid). */
export function valid(schema: Schema | boolean | undefined, ctx: GenContext, key = '', depth = 0): fc.Arbitrary<unknown> {
  if (schema === undefined || schema === true) return fc.jsonValue({ maxDepth: 1 });
  if (schema === false) return fc.constant(undefined);
  const s = resolve(schema, ctx);
  if ('const' in s) return fc.constant(s.const);
  if (Array.isArray(s.enum)) return fc.constantFrom(...(s.enum as unknown[]));
  const alts = (s.anyOf ?? s.oneOf) as Schema[] | undefined;
  if (alts) {
    const usable = depth >= MAX_DEPTH ? alts.filter((a) => !JSON.stringify(a).includes('$ref')) : alts;
    return fc.oneof(...(usable.length ? usable : alts.slice(0, 1)).map((a) => valid({ ...omit(s, ['anyOf', 'oneOf']), ...a }, ctx, key, depth + 1)));
  }
  if (Array.isArray(s.allOf) && s.allOf.length)
    return valid({ ...omit(s, ['allOf']), ...Object.assign({}, ...(s.allOf as Schema[]).map((x) => resolve(x, ctx))) }, ctx, key, depth + 1);
  const type = s.type;
  if (Array.isArray(type)) return fc.oneof(...type.map((t) => valid({ ...s, type: t }, ctx, key, depth)));
  switch (type) {
    case 'string':
      return stringOf(s, ctx, key);
    case 'integer':
      return numberOf(s, true);
    case 'number':
      return numberOf(s, false);
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array': {
      const min = typeof s.minItems === 'number' ? s.minItems : 0;
      const max = Math.max(min, Math.min(typeof s.maxItems === 'number' ? s.maxItems : 3, depth >= MAX_DEPTH ? min : 3));
      return fc.array(valid(s.items as Schema, ctx, key, depth + 1), { minLength: min, maxLength: max });
    }
    case 'object':
    case undefined: {
      const props = (s.properties ?? {}) as Record<string, Schema>;
      if (type === undefined && !s.properties && !s.additionalProperties) return fc.jsonValue({ maxDepth: 1 });
      const required = new Set((s.required ?? []) as string[]);
      const model: Record<string, fc.Arbitrary<unknown>> = {};
      for (const [k, v] of Object.entries(props)) model[k] = valid(v, ctx, k, depth + 1);
      const rec = fc.record(model, { requiredKeys: [...required].filter((k) => k in model) });
      const extra = s.additionalProperties;
      if (extra && typeof extra === 'object') {
        const minP = typeof s.minProperties === 'number' ? s.minProperties : 0;
        const dict = fc.dictionary(safeKey, valid(extra as Schema, ctx, '', depth + 1), { minKeys: Math.max(minP, 1), maxKeys: Math.max(minP, 1) + 2 });
        return fc.tuple(rec, dict).map(([r, d]) => ({ ...d, ...r }));
      }
      return rec;
    }
    default:
      return fc.jsonValue({ maxDepth: 1 });
  }
}

function omit(s: Schema, keys: string[]): Schema {
  const out = { ...s };
  for (const k of keys) delete out[k];
  return out;
}

/** A value the schema most likely refuses: a valid one with one thing broken, or anything at all. */
export function invalid(schema: Schema, ctx: GenContext): fc.Arbitrary<unknown> {
  const base = valid(schema, ctx);
  const weird = fc.oneof(fc.jsonValue({ maxDepth: 3 }), fc.constant({ $where: '1' }), fc.string({ maxLength: 40 }), fc.integer(), fc.constant(null));
  return fc.oneof(
    weird,
    fc.tuple(base, weird, safeKey).map(([v, w, k]) => (v && typeof v === 'object' && !Array.isArray(v) ? { ...(v as object), [`zz${k}`]: w } : w)),
    fc.tuple(base, weird, fc.nat()).map(([v, w, n]) => {
      if (!v || typeof v !== 'object' || Array.isArray(v)) return w;
      const keys = Object.keys(v);
      if (!keys.length) return w;
      const copy = { ...(v as Record<string, unknown>) };
      if (n % 2) delete copy[keys[n % keys.length]!];
      else copy[keys[n % keys.length]!] = w;
      return copy;
    }),
  );
}
