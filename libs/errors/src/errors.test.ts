import { z } from 'zod';
import { DomainError, ERROR_CODE_GROUPS, ERROR_CODES, ERROR_KINDS, invalidFields, isErrorCode, notFound, parseOrInvalid, readCodeCatalogue, type ErrorCode } from './index.ts';

describe('the error catalogue', () => {
  it('gives every code one kind from the list, under one group only', () => {
    const grouped = Object.values(ERROR_CODE_GROUPS).flat();
    expect(grouped.length).toBe(new Set(grouped).size);
    expect(new Set(grouped)).toEqual(new Set(Object.keys(ERROR_CODES)));
    for (const [code, entry] of Object.entries(ERROR_CODES)) {
      expect({ code, known: (ERROR_KINDS as readonly string[]).includes(entry.kind) }).toEqual({ code, known: true });
      expect({ code, meaning: entry.meaning.length > 20 }).toEqual({ code, meaning: true });
      expect(code).toMatch(/^[a-z][a-z_]*[a-z]$/);
    }
  });

  it('has domain codes, not HTTP classes, for the failures of each service', () => {
    for (const group of ['accounts', 'sources', 'analytics', 'models', 'webhooks']) {
      for (const code of ERROR_CODE_GROUPS[group]!) expect({ code, isKind: (ERROR_KINDS as readonly string[]).includes(code) }).toEqual({ code, isKind: false });
    }
    expect(ERROR_CODES.source_not_found.kind).toBe('not_found');
    expect(ERROR_CODES.model_not_ready.kind).toBe('conflict');
    expect(ERROR_CODES.validation_failed.kind).toBe('invalid');
  });

  it('refuses a catalogue with an unknown kind or a code in two groups', () => {
    const entry = { kind: 'conflict', meaning: 'A meaning long enough to read.' };
    expect(readCodeCatalogue({ a: { one_code: entry }, b: { other_code: entry } }).groups).toEqual({ a: ['one_code'], b: ['other_code'] });
    expect(() => readCodeCatalogue({ a: { one_code: { ...entry, kind: 'teapot' } } })).toThrow('one_code has the unknown kind teapot');
    expect(() => readCodeCatalogue({ a: { one_code: entry }, b: { one_code: entry } })).toThrow('one_code stands in two groups');
  });

  it('knows its codes and nothing else', () => {
    expect(isErrorCode('source_not_found')).toBe(true);
    expect(isErrorCode('toString')).toBe(false);
    expect(isErrorCode('no_such_code')).toBe(false);
  });
});

describe('DomainError', () => {
  it('takes its kind from its code, and keeps the field errors, count, retry delay and cause', () => {
    const cause = new Error('internal detail');
    const err = new DomainError('report_running', 'report rep_1 is still running', { retryAfterSeconds: 1, cause });
    expect([err.code, err.kind, err.message, err.retryAfterSeconds, err.cause]).toEqual(['report_running', 'conflict', 'report rep_1 is still running', 1, cause]);
    expect(err).toBeInstanceOf(Error);
    const invalid = new DomainError('validation_failed', 'bad', { errors: [{ path: 'a', message: 'm' }], errorCount: 7 });
    expect([invalid.kind, invalid.errors, invalid.errorCount, invalid.retryAfterSeconds]).toEqual(['invalid', [{ path: 'a', message: 'm' }], 7, undefined]);
  });

  it('names what was not found under its own code', () => {
    const err = notFound('model_not_found', 'model');
    expect([err.code, err.kind, err.message]).toEqual(['model_not_found', 'not_found', 'model was not found']);
  });

  it('lists the first five field errors in the detail and keeps them all in errors', () => {
    const errors = Array.from({ length: 7 }, (_, i) => ({ path: `inputs.${i}`, message: 'required' }));
    const err = invalidFields('validation_failed', 'the inputs are invalid', errors);
    expect(err.code).toBe('validation_failed');
    expect(err.message).toBe(
      `the inputs are invalid: ${errors
        .slice(0, 5)
        .map((e) => `${e.path}: required`)
        .join('; ')}`,
    );
    expect(err.errors).toHaveLength(7);
  });

  it('is what parseOrInvalid throws for a value that fails its schema, and not for one that passes', () => {
    const schema = z.strictObject({ n: z.number() });
    expect(parseOrInvalid(schema, { n: 1 }, 'body')).toEqual({ n: 1 });
    let thrown: unknown;
    try {
      parseOrInvalid(schema, { n: 'x' }, 'body');
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(DomainError);
    expect(thrown).toMatchObject({ code: 'validation_failed' satisfies ErrorCode, errors: [{ path: 'n' }] });
  });
});
