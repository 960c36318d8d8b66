import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { API_OPERATIONS, type ApiOperation } from '@dap/contracts';
import { isErrorCode, type ErrorCode } from '@dap/errors';
import { statusOf } from '@dap/http';
import { repoRoot } from '@dap/testing';
import { buildOpenApi } from '../../gateway/src/openapi/openapi.ts';

/**
 * The statuses each service route can answer, read from the code: every route handler of every service is
 * followed through the functions and methods it calls (as the type checker resolves them, within this
 * repository), collecting each `new DomainError('<code>', …)` (or `AppError`, `notFound('<code>', …)`,
 * `invalidFields('<code>', …)`) it can reach; each code's status must be documented for the route's operation.
 * A call through an interface (a connector) is not followed: those errors are mapped to DomainErrors by the
 * service, which is.
 */
type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- the document is walked generically

const root = repoRoot();
const services = ['accounts', 'sources', 'analytics', 'models', 'webhooks'] as const;
const doc = buildOpenApi('https://api.example.com') as Json;

/** Route factory → where its app mounts it, from each service's app.ts (`['/v1/keys', keyRoutes(…)]` given to createServiceApp). */
function mounts(): Map<string, string> {
  const out = new Map<string, string>();
  for (const s of services) {
    const text = readFileSync(join(root, 'services', s, 'src', 'app.ts'), 'utf8');
    for (const m of text.matchAll(/\[\s*'([^']+)'\s*,\s*(\w+)\(/g)) out.set(m[2]!, m[1]!);
    // Stream routes (uploads) are mounted by createServiceApp: `streamRoutes: { path: '/v1/sources', routes: uploadRoutes(…) }`.
    for (const m of text.matchAll(/path:\s*'([^']+)'\s*,\s*routes:\s*(\w+)\(/g)) out.set(m[2]!, m[1]!);
  }
  return out;
}

/** What raises an error whose code is its first argument. */
const RAISERS = new Set(['DomainError', 'AppError', 'notFound', 'invalidFields']);

const normal = (path: string) => path.replace(/:\w+|\{\w+\}/g, '{}').replace(/\/$/, '') || '/';

describe('every status a service route can answer is documented for its operation', () => {
  const files = services.flatMap((s) =>
    readdirSync(join(root, 'services', s, 'src', 'http'))
      .filter((f) => f.endsWith('.routes.ts'))
      .map((f) => join(root, 'services', s, 'src', 'http', f)),
  );
  const program = ts.createProgram(files, {
    allowImportingTsExtensions: true,
    noEmit: true,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    strict: true,
  });
  const checker = program.getTypeChecker();
  const memo = new Map<ts.Node, Set<ErrorCode>>();

  /** The error codes a function body can raise, following the calls it makes. */
  function codesOf(node: ts.Node, depth = 0): Set<ErrorCode> {
    const known = memo.get(node);
    if (known) return known;
    const codes = new Set<ErrorCode>();
    memo.set(node, codes); // a cycle contributes nothing more
    if (depth > 12) return codes;
    const visit = (n: ts.Node): void => {
      if ((ts.isNewExpression(n) || ts.isCallExpression(n)) && RAISERS.has(n.expression.getText()) && n.arguments?.[0]) {
        const a = n.arguments[0];
        if (ts.isStringLiteral(a) && isErrorCode(a.text)) codes.add(a.text);
      }
      if (ts.isCallExpression(n) || ts.isNewExpression(n)) {
        const decl = checker.getResolvedSignature(n)?.declaration;
        if (decl && !ts.isJSDocSignature(decl) && 'body' in decl && decl.body) {
          const file = decl.getSourceFile().fileName;
          if (file.startsWith(root) && !file.includes('node_modules')) for (const c of codesOf(decl.body as ts.Node, depth + 1)) codes.add(c);
        }
      }
      ts.forEachChild(n, visit);
    };
    visit(node);
    return codes;
  }

  const ROUTE_METHODS = ['get', 'post', 'put', 'patch', 'delete'];
  const isRouteCall = (n: ts.Node): n is ts.CallExpression & { expression: ts.PropertyAccessExpression } =>
    ts.isCallExpression(n) && ts.isPropertyAccessExpression(n.expression) && ROUTE_METHODS.includes(n.expression.name.text);

  /**
   * A route builder (`savedResourceRoutes(router, { path: '/insights', get: …, … })`) registers routes whose paths
   * are built from its spec's `path`: each of its routes is expanded at every call with a literal `path`, and a
   * handler's codes include those of the spec's members it calls (`r.get(…)` follows the spec's `get`).
   */
  function expandBuilder(call: ts.CallExpression): { method: string; path: string; handler: ts.Node; codes: Set<ErrorCode> }[] {
    const decl = checker.getResolvedSignature(call)?.declaration;
    const spec = call.arguments.find(ts.isObjectLiteralExpression);
    if (!decl || !ts.isFunctionDeclaration(decl) || !decl.body || !spec) return [];
    const specParam = decl.parameters[call.arguments.indexOf(spec)]?.name;
    const members = new Map<string, ts.Node>();
    for (const p of spec.properties) if (ts.isPropertyAssignment(p) && ts.isIdentifier(p.name)) members.set(p.name.text, p.initializer);
    const base = members.get('path');
    if (!specParam || !ts.isIdentifier(specParam) || !base || !ts.isStringLiteral(base)) return [];
    const isSpecPath = (e: ts.Node) => ts.isPropertyAccessExpression(e) && e.expression.getText() === specParam.text && e.name.text === 'path';
    const pathOf = (e: ts.Node): string | null => {
      if (isSpecPath(e)) return base.text;
      if (ts.isTemplateExpression(e) && e.templateSpans.every((sp) => isSpecPath(sp.expression)))
        return e.head.text + e.templateSpans.map((sp) => base.text + sp.literal.text).join('');
      return null;
    };
    const out: { method: string; path: string; handler: ts.Node; codes: Set<ErrorCode> }[] = [];
    const visit = (n: ts.Node): void => {
      const [pathArg, handler] = isRouteCall(n) ? n.arguments : [];
      const path = pathArg ? pathOf(pathArg) : null;
      if (isRouteCall(n) && handler && path !== null) {
        const codes = new Set(codesOf(handler));
        const used = (m: ts.Node): void => {
          if (ts.isPropertyAccessExpression(m) && m.expression.getText() === specParam.text) {
            const member = members.get(m.name.text);
            if (member) for (const c of codesOf(member)) codes.add(c);
          }
          ts.forEachChild(m, used);
        };
        used(handler);
        out.push({ method: n.expression.name.text, path, handler, codes });
      }
      ts.forEachChild(n, visit);
    };
    visit(decl.body);
    return out;
  }

  const routeMounts = mounts();
  const found: { op: ApiOperation; codes: Set<ErrorCode>; where: string }[] = [];
  for (const file of files) {
    const source = program.getSourceFile(file)!;
    const record = (factory: string, method: string, routePath: string, codes: Set<ErrorCode>, at: ts.Node): void => {
      // A factory mounted without a path (`app.use(sourceRoutes(…))`) registers full paths.
      const mount = routeMounts.get(factory) ?? (routePath.startsWith('/v1/') ? '' : undefined);
      const path = normal(`${mount ?? ''}${routePath}`);
      const op = API_OPERATIONS.find((o) => o.method === method && normal(`/v1${o.path}`) === path);
      if (mount !== undefined && !mount.startsWith('/internal')) {
        expect([`${method} ${path}`, op !== undefined]).toEqual([`${method} ${path}`, true]);
        found.push({ op: op!, codes, where: `${file.slice(root.length + 1)}:${source.getLineAndCharacterOfPosition(at.getStart()).line + 1}` });
      }
    };
    const visit = (n: ts.Node, factory: string | null): void => {
      if (ts.isFunctionDeclaration(n) && n.name) factory = n.name.text;
      if (isRouteCall(n)) {
        const [pathArg, handler] = n.arguments;
        if (pathArg && ts.isStringLiteral(pathArg) && handler && factory) record(factory, n.expression.name.text, pathArg.text, codesOf(handler), n);
      } else if (ts.isCallExpression(n) && factory) {
        for (const r of expandBuilder(n)) record(factory, r.method, r.path, r.codes, n);
      }
      ts.forEachChild(n, (c) => visit(c, factory));
    };
    visit(source, null);
  }

  it('finds a route for every operation the services answer', () => {
    const routed = new Set(found.map((f) => f.op.operationId));
    expect(API_OPERATIONS.filter((o) => o.service !== 'gateway' && !routed.has(o.operationId)).map((o) => o.operationId)).toEqual([]);
  });

  it('documents each status the route can reach', () => {
    const undocumented: string[] = [];
    for (const { op, codes, where } of found) {
      const responses = doc.paths[op.path][op.method].responses as Json;
      for (const code of codes) {
        const status = statusOf(code);
        if (!(String(status) in responses)) undocumented.push(`${op.operationId} ${status} (${code}) from ${where}`);
      }
    }
    expect(undocumented).toEqual([]);
  });

  it('sees the errors it should (a positive control)', () => {
    const of = (id: string) => [...found.find((f) => f.op.operationId === id)!.codes].sort();
    expect(of('createSource')).toEqual(expect.arrayContaining(['source_target_not_allowed', 'source_refused', 'validation_failed']));
    expect(of('getWebhook')).toContain('webhook_not_found');
    expect(of('deleteModel')).toContain('model_builtin_immutable');
    expect(of('predict')).toEqual(expect.arrayContaining(['model_output_not_finite', 'model_not_ready']));
    // Through the saved-resource route builder: the spec's own members are followed.
    expect(of('getInsight')).toContain('insight_not_found');
    expect(of('updateDashboard')).toEqual(expect.arrayContaining(['dashboard_not_found', 'validation_failed']));
  });
});
