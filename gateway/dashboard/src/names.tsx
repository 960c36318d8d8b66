import { Fragment, type ReactNode } from 'react';
import { ApiError, unwrap, type ApiClient } from './api/client.ts';
import type { Page, ReportSummaryDto } from './api/types.ts';
import { useResource } from './hooks.ts';
import { describeQuery } from './query-text.ts';
import { Link } from './router.tsx';

/** What an id stands for, as a customer knows it. `gone` when the thing was deleted. */
export interface Named {
  name: string;
  to: string | null;
  gone: boolean;
}

const KINDS: { prefix: string; noun: string; to: (id: string) => string }[] = [
  { prefix: 'src_', noun: 'source', to: (id) => `/sources/${id}` },
  { prefix: 'mdl_', noun: 'model', to: (id) => `/models/${id}` },
  { prefix: 'whk_', noun: 'webhook endpoint', to: (id) => `/webhooks/${id}` },
  { prefix: 'rpt_', noun: 'report', to: (id) => `/analytics/reports/${id}` },
];

export const kindOf = (id: string) => KINDS.find((k) => id.startsWith(k.prefix)) ?? null;

/** The ids in a text that name sources, models, webhooks or reports. */
export const ID_PATTERN = /\b(?:src|mdl|whk|rpt)_[A-Za-z0-9]+\b/g;

async function nameOne(api: ApiClient, id: string, reports: () => Promise<ReportSummaryDto[]>, signal: AbortSignal): Promise<Named | null> {
  const kind = kindOf(id);
  if (!kind) return null;
  try {
    const path = { params: { path: { id } }, signal };
    if (kind.prefix === 'src_') return { name: (await unwrap(api.openapi.GET('/sources/{id}', path))).name, to: kind.to(id), gone: false };
    if (kind.prefix === 'mdl_') return { name: (await unwrap(api.openapi.GET('/models/{id}', path))).name, to: kind.to(id), gone: false };
    if (kind.prefix === 'whk_') {
      const w = await unwrap(api.openapi.GET('/webhooks/{id}', path));
      return { name: w.description.trim() || w.url, to: kind.to(id), gone: false };
    }
    // A report has no name: its query, read out, is what the reports page lists it by (fetching the report
    // itself would bring all its rows).
    const r = (await reports()).find((x) => x.id === id);
    return r ? { name: describeQuery(r.query), to: kind.to(id), gone: false } : { name: 'an earlier report', to: kind.to(id), gone: false };
  } catch (err) {
    if (err instanceof ApiError && err.status === 404) return { name: `a deleted ${kind.noun}`, to: null, gone: true };
    if ((err as Error).name === 'AbortError') throw err;
    return null;
  }
}

/**
 * Looks up the names of these ids through the API (each source, model and webhook by its id; reports from
 * the latest page of reports), so the dashboard shows names where the API speaks in ids.
 */
export function useNames(ids: readonly string[]): (id: string) => Named | undefined {
  const unique = [...new Set(ids)].filter((id) => kindOf(id)).sort();
  const key = unique.length ? `names:${unique.join(',')}` : null;
  const names = useResource<Map<string, Named>>(key, async (api, signal) => {
    let reportPage: Promise<ReportSummaryDto[]> | null = null;
    const reports = () => (reportPage ??= unwrap(api.openapi.GET('/analytics/reports', { params: { query: { limit: 100 } }, signal })).then((p: Page<ReportSummaryDto>) => p.data));
    const found = await Promise.all(unique.map(async (id) => [id, await nameOne(api, id, reports, signal)] as const));
    return new Map(found.filter((e): e is readonly [string, Named] => e[1] !== null));
  });
  return (id) => names.data?.get(id);
}

/** An id shown by its name (a link while the thing exists), or a neutral placeholder while it loads. */
export function NameOf({ id, named, className }: { id: string; named: Named | undefined; className?: string }) {
  if (!named) return <span className={`muted ${className ?? ''}`.trim()}>{kindOf(id) ? `a ${kindOf(id)!.noun}` : ''}</span>;
  if (!named.to || named.gone)
    return (
      <span className={`muted ${className ?? ''}`.trim()} title={id}>
        {named.name}
      </span>
    );
  return (
    <Link to={named.to} className={className} title={id}>
      {named.name}
    </Link>
  );
}

/**
 * A description written by the API, made readable: ids become the names they stand for, and field lists
 * written as templates (`is {prediction, probabilities}`) become the fields' names.
 */
export function ReadableText({ text, names }: { text: string; names: (id: string) => Named | undefined }) {
  const parts: ReactNode[] = [];
  const pattern = new RegExp(`(?:\\bis )?\\{([A-Za-z0-9_, ]+)\\}|${ID_PATTERN.source}`, 'g');
  let last = 0;
  for (const m of text.matchAll(pattern)) {
    parts.push(text.slice(last, m.index));
    if (m[1] !== undefined) {
      const fields = m[1]
        .split(',')
        .map((f) => f.trim())
        .filter(Boolean);
      parts.push(
        <Fragment key={m.index}>
          {m[0].startsWith('is ') ? 'has ' : ''}
          {fields.map((f, i) => (
            <Fragment key={f}>
              {i > 0 && (i === fields.length - 1 ? ' and ' : ', ')}
              <code>{f}</code>
            </Fragment>
          ))}
        </Fragment>,
      );
    } else {
      parts.push(<NameOf key={m.index} id={m[0]} named={names(m[0])} />);
    }
    last = m.index + m[0].length;
  }
  parts.push(text.slice(last));
  return <>{parts}</>;
}

/** The ids a text mentions (to look their names up). */
export const idsIn = (text: string | null | undefined): string[] => (text ? [...text.matchAll(ID_PATTERN)].map((m) => m[0]) : []);
