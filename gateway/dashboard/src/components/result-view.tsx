import { useState } from 'react';
import type { ReportDto } from '../api/types.ts';
import { formatCell, formatNumber } from '../format.ts';
import { BarChart, LineChart } from './charts.tsx';
import { Field, Stat, TableWrap } from './ui.tsx';
import { lastPeriodPartial } from '../periods.ts';

const MAX_TABLE_ROWS = 200;
const MAX_SERIES = 6;

interface QueryShape {
  dimensions: string[];
  timeField: string | null;
  granularity: string | null;
}

function shapeOf(query: Record<string, unknown>): QueryShape {
  const dims = Array.isArray(query.dimensions) ? (query.dimensions as unknown[]).filter((d): d is string => typeof d === 'string') : [];
  const td = query.timeDimension as { field?: unknown; granularity?: unknown } | undefined;
  return {
    dimensions: dims,
    timeField: td && typeof td.field === 'string' ? td.field : null,
    granularity: td && typeof td.granularity === 'string' ? td.granularity : null,
  };
}

/** A time bucket label that fits its granularity (no 00:00 on a monthly chart). */
export function bucketLabel(v: unknown, granularity: string | null): string {
  if (v === null || v === undefined) return '(none)';
  const d = new Date(String(v).replace(' ', 'T') + (/[zZ]|[+-]\d\d:?\d\d$/.test(String(v)) ? '' : 'Z'));
  if (Number.isNaN(d.getTime())) return String(v);
  const iso = d.toISOString();
  switch (granularity) {
    case 'year':
      return iso.slice(0, 4);
    case 'month':
      return iso.slice(0, 7);
    case 'hour':
      return `${iso.slice(0, 10)} ${iso.slice(11, 16)}`;
    default:
      return iso.slice(0, 10);
  }
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** A compact axis label for a bucket label from bucketLabel: "3 Mar", "Mar 2025", "3 Mar 10:00". */
export function shortBucket(label: string, granularity: string | null): string {
  const m = /^(\d{4})-(\d{2})(?:-(\d{2}))?(?: (\d{2}:\d{2}))?$/.exec(label);
  if (!m) return label;
  const month = MONTHS[Number(m[2]) - 1] ?? m[2];
  if (granularity === 'month') return `${month} ${m[1]}`;
  if (!m[3]) return label;
  const day = `${Number(m[3])} ${month}`;
  return granularity === 'hour' && m[4] ? `${day} ${m[4]}` : day;
}

const asNumber = (v: unknown): number | null =>
  typeof v === 'number' && Number.isFinite(v) ? v : typeof v === 'string' && v.trim() !== '' && Number.isFinite(Number(v)) ? Number(v) : null;

export const CHART_TYPES = ['line', 'bar', 'area', 'table', 'number'] as const;
export type ChartType = (typeof CHART_TYPES)[number];
const CHART_LABELS: Record<ChartType, string> = { line: 'Line', bar: 'Bar', area: 'Area', table: 'Table only', number: 'Number' };

/** Ops whose values add up across groups (so a total means something). */
const ADDITIVE = new Set(['count', 'sum']);

function opOf(query: Record<string, unknown>, name: string): string | null {
  const ms = Array.isArray(query.measures) ? (query.measures as { op?: string; field?: string; as?: string }[]) : [];
  const m = ms.find((x) => (x.as ?? (x.field ? `${x.op}_${x.field}` : x.op)) === name);
  return m?.op ?? null;
}

/**
 * A completed report as a chart of the customer's choice (line, bar, area, table only or a big number) and a
 * table. `chartType`/`onChartType` let a page keep the choice (Explore keeps it in the URL).
 */
/** What a chart needs of a result: a stored report's, or one run without a report (an insight's). */
export type ResultLike = Pick<ReportDto, 'query' | 'columns' | 'rows' | 'truncated' | 'totalRows'>;

export function ResultView({
  report,
  chartType,
  onChartType,
  now,
  compact = false,
}: {
  report: ResultLike;
  chartType?: ChartType | null;
  onChartType?: (t: ChartType) => void;
  now?: number;
  /** A dashboard tile: the chart alone, without the chart picker and the table. */
  compact?: boolean;
}) {
  const shape = shapeOf(report.query);
  const keyCols = new Set([...shape.dimensions, ...(shape.timeField ? [shape.timeField] : [])]);
  const measures = report.columns.filter((c) => !keyCols.has(c.name)).map((c) => c.name);
  const [measure, setMeasure] = useState<string>(measures[0] ?? '');
  const fallbackType: ChartType = shape.timeField ? 'line' : shape.dimensions.length > 0 ? 'bar' : 'number';
  const [ownType, setOwnType] = useState<ChartType | null>(null);
  const type: ChartType = chartType ?? ownType ?? fallbackType;
  const setType = (t: ChartType) => (onChartType ? onChartType(t) : setOwnType(t));
  const m = measures.includes(measure) ? measure : (measures[0] ?? '');
  const rows = report.rows;
  const partial = shape.timeField !== null && lastPeriodPartial(rows, report.query, now);

  let chart = null;
  let numbers: { label: string; value: string; hint?: string }[] = [];
  if (rows.length > 0 && measures.length > 0) {
    if (shape.timeField) {
      const times = [...new Set(rows.map((r) => bucketLabel(r[shape.timeField!], shape.granularity)))].sort();
      const index = new Map(times.map((t, i) => [t, i]));
      let series: { name: string; values: (number | null)[] }[];
      if (shape.dimensions.length === 0) {
        const values: (number | null)[] = times.map(() => null);
        for (const r of rows) values[index.get(bucketLabel(r[shape.timeField!], shape.granularity))!] = asNumber(r[m]);
        series = [{ name: m, values }];
      } else {
        const groups = new Map<string, (number | null)[]>();
        for (const r of rows) {
          const g = shape.dimensions.map((d) => formatCell(r[d])).join(' · ');
          if (!groups.has(g)) {
            if (groups.size >= MAX_SERIES) continue;
            groups.set(
              g,
              times.map(() => null),
            );
          }
          groups.get(g)![index.get(bucketLabel(r[shape.timeField!], shape.granularity))!] = asNumber(r[m]);
        }
        series = [...groups].map(([name, values]) => ({ name, values }));
      }
      const title = `${m} by ${shape.granularity ?? 'time'}`;
      const labelFormat = (l: string) => shortBucket(l, shape.granularity);
      if (type === 'line' || type === 'area')
        chart = <LineChart title={title} labels={times} series={series} labelFormat={labelFormat} area={type === 'area'} partialLast={partial} />;
      else if (type === 'bar') {
        const data =
          series.length === 1
            ? times.map((t, i) => ({ label: t, value: series[0]!.values[i] ?? 0 }))
            : times.flatMap((t, i) => series.map((s) => ({ label: `${t} · ${s.name}`, value: s.values[i] ?? 0 })));
        chart = (
          <BarChart
            title={title}
            valueLabel={m}
            data={data.slice(0, 200)}
            labelFormat={series.length === 1 ? labelFormat : undefined}
            partialLast={partial && series.length === 1}
          />
        );
      } else if (type === 'number') {
        const lastIndex = times.length - 1;
        numbers = series.map((s) => ({
          label: `${series.length > 1 ? `${s.name} · ` : ''}${m}, ${labelFormat(times[lastIndex]!)}${partial ? ' (partial)' : ''}`,
          value: s.values[lastIndex] === null || s.values[lastIndex] === undefined ? '—' : formatNumber(s.values[lastIndex]!),
          ...(lastIndex > 0 && s.values[lastIndex - 1] !== null && s.values[lastIndex - 1] !== undefined
            ? { hint: `${labelFormat(times[lastIndex - 1]!)}: ${formatNumber(s.values[lastIndex - 1]!)}` }
            : {}),
        }));
      }
    } else if (shape.dimensions.length > 0) {
      const data = rows.slice(0, 100).map((r) => ({ label: shape.dimensions.map((d) => formatCell(r[d])).join(' · '), value: asNumber(r[m]) ?? 0 }));
      const title = `${m} by ${shape.dimensions.join(', ')}`;
      if (type === 'bar') chart = <BarChart title={title} valueLabel={m} data={data} />;
      else if (type === 'line' || type === 'area')
        chart = <LineChart title={title} labels={data.map((d) => d.label)} series={[{ name: m, values: data.map((d) => d.value) }]} area={type === 'area'} />;
      else if (type === 'number') {
        const op = opOf(report.query, m);
        const top = [...data].sort((a, b) => b.value - a.value)[0]!;
        numbers =
          op && ADDITIVE.has(op) && !report.truncated
            ? [
                {
                  label: `${m}, all ${shape.dimensions.join(', ')}`,
                  value: formatNumber(data.reduce((t, d) => t + d.value, 0)),
                  hint: `Top: ${top.label} ${formatNumber(top.value)}`,
                },
              ]
            : [{ label: `${m}, top ${shape.dimensions.join(', ')}`, value: formatNumber(top.value), hint: top.label }];
      }
    }
  }
  const canChart = rows.length > 0 && measures.length > 0 && (shape.timeField !== null || shape.dimensions.length > 0);

  return (
    <div className="result">
      {rows.length > 0 && shape.dimensions.length === 0 && !shape.timeField ? (
        <div className="stats">
          {measures.map((name) => (
            <Stat key={name} label={name} value={formatCell(rows[0]?.[name])} />
          ))}
        </div>
      ) : null}
      {canChart && (
        <div className="result-chart">
          {!compact && (
            <div className="chart-type-picker">
              <Field label="Chart type" className="field-inline">
                {(p) => (
                  <select {...p} className="input input-sm" value={type} onChange={(e) => setType(e.target.value as ChartType)}>
                    {CHART_TYPES.map((t) => (
                      <option key={t} value={t}>
                        {CHART_LABELS[t]}
                      </option>
                    ))}
                  </select>
                )}
              </Field>
              {measures.length > 1 && type !== 'table' && (
                <Field label="Chart measure" className="field-inline">
                  {(p) => (
                    <select {...p} className="input input-sm" value={m} onChange={(e) => setMeasure(e.target.value)}>
                      {measures.map((name) => (
                        <option key={name} value={name}>
                          {name}
                        </option>
                      ))}
                    </select>
                  )}
                </Field>
              )}
            </div>
          )}
          {numbers.length > 0 && (
            <div className="stats big-numbers" data-testid="big-numbers">
              {numbers.map((n) => (
                <Stat key={n.label} label={n.label} value={n.value} hint={n.hint} />
              ))}
            </div>
          )}
          {chart}
        </div>
      )}
      {rows.length === 0 ? (
        <p className="muted">The query matched no rows.</p>
      ) : compact && canChart && type !== 'table' ? null : (
        <TableWrap label="Query result">
          <table className="table table-compact" data-testid="result-table">
            <thead>
              <tr>
                {report.columns.map((c) => (
                  <th key={c.name} scope="col" className={measures.includes(c.name) ? 'num' : ''}>
                    {c.name}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {rows.slice(0, MAX_TABLE_ROWS).map((r, i) => (
                <tr key={i}>
                  {report.columns.map((c) => (
                    <td key={c.name} className={typeof r[c.name] === 'number' ? 'num' : ''}>
                      {c.name === shape.timeField ? bucketLabel(r[c.name], shape.granularity) : formatCell(r[c.name], c.type)}
                    </td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
        </TableWrap>
      )}
      {!compact && report.truncated && (
        <p className="muted small" data-testid="result-truncated">
          {report.totalRows === null
            ? `This page holds ${formatNumber(rows.length)} rows and the result may have more (the query's limit); `
            : `This page holds ${formatNumber(rows.length)} of the result's ${formatNumber(report.totalRows)} rows (the query's limit and offset); `}
          the CSV and Parquet downloads carry all of them.
        </p>
      )}
      {!compact && rows.length > MAX_TABLE_ROWS && (
        <p className="muted small">
          Showing {formatNumber(MAX_TABLE_ROWS)} of {formatNumber(rows.length)} rows; download the CSV for all of them.
        </p>
      )}
    </div>
  );
}
