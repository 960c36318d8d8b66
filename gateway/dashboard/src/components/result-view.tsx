import { useState } from 'react';
import type { ReportDto } from '../api/types.ts';
import { formatCell, formatNumber } from '../format.ts';
import { BarChart, LineChart } from './charts.tsx';
import { Field, Stat, TableWrap } from './ui.tsx';

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

/** A completed report as a chart (bars by dimension, lines over time, or big numbers) and a table. */
export function ResultView({ report }: { report: ReportDto }) {
  const shape = shapeOf(report.query);
  const keyCols = new Set([...shape.dimensions, ...(shape.timeField ? [shape.timeField] : [])]);
  const measures = report.columns.filter((c) => !keyCols.has(c.name)).map((c) => c.name);
  const [measure, setMeasure] = useState<string>(measures[0] ?? '');
  const m = measures.includes(measure) ? measure : (measures[0] ?? '');
  const rows = report.rows;

  let chart = null;
  if (rows.length > 0 && measures.length > 0) {
    if (shape.timeField) {
      const times = [...new Set(rows.map((r) => bucketLabel(r[shape.timeField!], shape.granularity)))];
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
      chart = <LineChart title={`${m} by ${shape.granularity ?? 'time'}`} labels={times} series={series} labelFormat={(l) => shortBucket(l, shape.granularity)} />;
    } else if (shape.dimensions.length > 0) {
      const data = rows.slice(0, 100).map((r) => ({ label: shape.dimensions.map((d) => formatCell(r[d])).join(' · '), value: asNumber(r[m]) ?? 0 }));
      chart = <BarChart title={`${m} by ${shape.dimensions.join(', ')}`} valueLabel={m} data={data} />;
    }
  }

  return (
    <div className="result">
      {rows.length > 0 && shape.dimensions.length === 0 && !shape.timeField ? (
        <div className="stats">
          {measures.map((name) => (
            <Stat key={name} label={name} value={formatCell(rows[0]?.[name])} />
          ))}
        </div>
      ) : null}
      {chart && (
        <div className="result-chart">
          {measures.length > 1 && (
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
          {chart}
        </div>
      )}
      {rows.length === 0 ? (
        <p className="muted">The query matched no rows.</p>
      ) : (
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
      {report.truncated && (
        <p className="muted small" data-testid="result-truncated">
          {report.totalRows === null
            ? `This page holds ${formatNumber(rows.length)} rows and the result may have more (the query's limit); `
            : `This page holds ${formatNumber(rows.length)} of the result's ${formatNumber(report.totalRows)} rows (the query's limit and offset); `}
          the CSV and Parquet downloads carry all of them.
        </p>
      )}
      {rows.length > MAX_TABLE_ROWS && (
        <p className="muted small">
          Showing {formatNumber(MAX_TABLE_ROWS)} of {formatNumber(rows.length)} rows; download the CSV for all of them.
        </p>
      )}
    </div>
  );
}
