import type { Column } from '@dap/contracts';

/** How a sync's columns differ from the ones the source's data had. */
export interface SchemaDiff {
  added: Column[];
  removed: Column[];
  retyped: { name: string; from: string; to: string }[];
}

/** Columns matched by name; their order is not a change. Null when nothing changed. */
export function schemaDiff(before: readonly Column[], after: readonly Column[]): SchemaDiff | null {
  const old = new Map(before.map((c) => [c.name, c.type]));
  const now = new Map(after.map((c) => [c.name, c.type]));
  const added = after.filter((c) => !old.has(c.name)).map((c) => ({ name: c.name, type: c.type }));
  const removed = before.filter((c) => !now.has(c.name)).map((c) => ({ name: c.name, type: c.type }));
  const retyped = after.filter((c) => old.has(c.name) && old.get(c.name) !== c.type).map((c) => ({ name: c.name, from: old.get(c.name)!, to: c.type }));
  return added.length || removed.length || retyped.length ? { added, removed, retyped } : null;
}

/** The change in words, for a sync's error: every column named. */
export function describeDiff(diff: SchemaDiff): string {
  const parts = [
    ...(diff.added.length ? [`added ${diff.added.map((c) => `${c.name} (${c.type})`).join(', ')}`] : []),
    ...(diff.removed.length ? [`removed ${diff.removed.map((c) => c.name).join(', ')}`] : []),
    ...(diff.retyped.length ? [`retyped ${diff.retyped.map((c) => `${c.name} (${c.from} → ${c.to})`).join(', ')}`] : []),
  ];
  return parts.join('; ');
}
