import { readFileSync } from 'node:fs';

/** The parts of V8's .cpuprofile JSON (written by `node --cpu-prof`) that a self-time summary needs. */
interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] }[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface SelfTimeRow {
  name: string;
  where: string;
  selfMs: number;
  selfPct: number;
}

export interface ProfileSummary {
  file: string;
  /** The part of the profile summarised (ms from its start), when not all of it. */
  window?: { fromMs: number; toMs: number };
  totalMs: number;
  /** Share of samples in which the process was idle (waiting in epoll), in %. */
  idlePct: number;
  topFunctions: SelfTimeRow[];
  /** Self time grouped by where the code lives: a node_modules package, node: internals, our code, GC. */
  byModule: SelfTimeRow[];
}

/** `…/node_modules/express/lib/router.js` → `express`; our files → their repo path; node internals → `node:…`. */
export function moduleOf(url: string, functionName: string): string {
  if (!url) return functionName.startsWith('(') ? functionName : '(native code: C++ bindings, builtins)';
  const nm = url.lastIndexOf('/node_modules/');
  if (nm >= 0) {
    const rest = url.slice(nm + '/node_modules/'.length).split('/');
    return rest[0]!.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]!;
  }
  if (url.startsWith('node:')) return `node:${url.slice(5).split('/').slice(0, 2).join('/')}`;
  const m = /\/(libs\/[^/]+|services\/[^/]+|gateway)\/src\//.exec(url);
  return m ? m[1]! : url.replace(/^file:\/\//, '');
}

function shortUrl(url: string, line: number): string {
  if (!url) return '';
  const nm = url.lastIndexOf('/node_modules/');
  const path = nm >= 0 ? url.slice(nm + '/node_modules/'.length) : url.replace(/^file:\/\/.*?\/(libs|services|gateway|deploy)\//, '$1/');
  return `${path}:${line + 1}`;
}

/**
 * Self time per function and per module. `window` (ms from the profile's start) keeps only the samples of the
 * load phase, so start-up (module loading, compiling) and shutdown do not dilute the picture.
 */
export function summarizeProfile(file: string, top = 15, window?: { fromMs: number; toMs: number }): ProfileSummary {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfUs = new Map<number, number>();
  const from = window ? profile.startTime + window.fromMs * 1000 : -Infinity;
  const to = window ? profile.startTime + window.toMs * 1000 : Infinity;
  // timeDeltas[i] is the time before sample i; attribute the gap after a sample to that sample's node.
  let t = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i] ?? 0;
    if (t < from || t > to) continue;
    const dt = profile.timeDeltas[i + 1] ?? 0;
    const id = profile.samples[i]!;
    selfUs.set(id, (selfUs.get(id) ?? 0) + Math.max(0, dt));
  }
  let total = 0;
  let idle = 0;
  const fnTotals = new Map<string, { name: string; where: string; us: number }>();
  const modTotals = new Map<string, number>();
  for (const [id, us] of selfUs) {
    const node = byId.get(id)!;
    const { functionName, url, lineNumber } = node.callFrame;
    total += us;
    if (functionName === '(idle)') {
      idle += us;
      continue;
    }
    const name = functionName || '(anonymous)';
    const where = shortUrl(url, lineNumber);
    const key = `${name}@${where}`;
    const row = fnTotals.get(key) ?? { name, where, us: 0 };
    row.us += us;
    fnTotals.set(key, row);
    const mod = moduleOf(url, name);
    modTotals.set(mod, (modTotals.get(mod) ?? 0) + us);
  }
  const busy = Math.max(1, total - idle);
  const rows = (entries: { name: string; where: string; us: number }[]) =>
    entries
      .sort((a, b) => b.us - a.us)
      .slice(0, top)
      .map((r) => ({ name: r.name, where: r.where, selfMs: Math.round(r.us / 100) / 10, selfPct: Math.round((1000 * r.us) / busy) / 10 }));
  return {
    file,
    ...(window ? { window: { fromMs: Math.round(window.fromMs), toMs: Math.round(window.toMs) } } : {}),
    totalMs: Math.round(total / 1000),
    idlePct: Math.round((1000 * idle) / Math.max(1, total)) / 10,
    topFunctions: rows([...fnTotals.values()]),
    byModule: rows([...modTotals].map(([name, us]) => ({ name, where: '', us }))),
  };
}
