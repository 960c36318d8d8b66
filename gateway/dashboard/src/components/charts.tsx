import { useEffect, useId, useRef, useState, type MouseEvent, type ReactNode, type RefObject } from 'react';
import { formatCompact, formatNumber } from '../format.ts';

/** Tracks an element's width so charts draw at real pixel size (legible text on a phone and a desktop). */
function useWidth<T extends HTMLElement>(fallback = 600): [RefObject<T | null>, number] {
  const ref = useRef<T>(null);
  const [width, setWidth] = useState(fallback);
  useEffect(() => {
    const el = ref.current;
    if (!el) return;
    setWidth(el.clientWidth || fallback);
    const ro = new ResizeObserver((entries) => {
      const w = entries[0]?.contentRect.width;
      if (w && Math.abs(w - width) > 1) setWidth(Math.floor(w));
    });
    ro.observe(el);
    return () => ro.disconnect();
    // Observe once; the width comes fresh from each entry.
  }, []);
  return [ref, width];
}

/** Round tick values covering [min, max], about `count` of them. */
export function niceTicks(min: number, max: number, count = 5, integer = false): number[] {
  if (!Number.isFinite(min) || !Number.isFinite(max)) return [0, 1];
  if (min === max) {
    if (min === 0) return [0, 1];
    min = Math.min(0, min);
    max = Math.max(0, max);
  }
  const span = max - min;
  const step0 = span / Math.max(1, count);
  const mag = 10 ** Math.floor(Math.log10(step0));
  const norm = step0 / mag;
  const step = Math.max(integer ? 1 : 0, (norm >= 5 ? 10 : norm >= 2 ? 5 : norm >= 1 ? 2 : 1) * mag);
  const start = Math.floor(min / step) * step;
  const end = Math.ceil(max / step) * step;
  const ticks: number[] = [];
  for (let v = start; v <= end + step / 2; v += step) ticks.push(Math.abs(v) < step / 1e6 ? 0 : Number(v.toPrecision(12)));
  return ticks;
}

const CHAR_PX = 6.6;
const truncate = (s: string, px: number) => {
  const max = Math.max(1, Math.floor(px / CHAR_PX));
  return s.length <= max ? s : `${s.slice(0, Math.max(1, max - 1))}…`;
};

function ChartFrame({
  title,
  summary,
  table,
  children,
  legend,
  showTitle,
}: {
  title: string;
  summary: string;
  table: ReactNode;
  children: ReactNode;
  legend?: ReactNode;
  showTitle?: boolean | undefined;
}) {
  return (
    <figure className="chart">
      {showTitle && (
        <p className="chart-title" aria-hidden="true">
          {title}
        </p>
      )}
      {children}
      {legend}
      <figcaption className="visually-hidden">{summary}</figcaption>
      <details className="chart-data">
        <summary>View data as a table</summary>
        <div className="table-wrap" role="region" aria-label={`${title} data`} tabIndex={0}>
          {table}
        </div>
      </details>
    </figure>
  );
}

/** Says why the last point or bar looks different: its period has not ended, so its value is not final. */
function PartialNote() {
  return (
    <p className="chart-partial-note" data-testid="partial-note">
      <span className="legend-swatch legend-partial" aria-hidden="true" /> The last period is still in progress: its value is partial.
    </p>
  );
}

export interface BarDatum {
  label: string;
  value: number;
}

/** Vertical bars, one per datum (`rect.chart-bar`), with a zero baseline and round ticks. */
export function BarChart({
  data,
  title,
  valueLabel,
  height = 240,
  format = formatNumber,
  labelFormat = (s: string) => s,
  showTitle,
  partialLast = false,
}: {
  data: BarDatum[];
  showTitle?: boolean;
  /** The last bar is a period still in progress: drawn apart and said so. */
  partialLast?: boolean;
  title: string;
  valueLabel: string;
  height?: number;
  format?: (n: number) => string;
  labelFormat?: (s: string) => string;
}) {
  const [ref, width] = useWidth<HTMLDivElement>();
  const [hover, setHover] = useState<number | null>(null);
  const clipId = useId();
  const values = data.map((d) => d.value);
  const ticks = niceTicks(
    Math.min(0, ...values),
    Math.max(0, ...values),
    5,
    values.every((v) => Number.isInteger(v)),
  );
  const lo = ticks[0]!;
  const hi = ticks[ticks.length - 1]!;
  const tickText = ticks.map((t) => formatCompact(t));
  const left = Math.max(...tickText.map((t) => t.length)) * CHAR_PX + 14;
  const margin = { top: 16, right: 12, bottom: 34, left };
  const w = Math.max(120, width);
  const innerW = w - margin.left - margin.right;
  const innerH = height - margin.top - margin.bottom;
  const y = (v: number) => margin.top + innerH - ((v - lo) / (hi - lo || 1)) * innerH;
  const band = innerW / Math.max(1, data.length);
  const barW = Math.max(2, Math.min(56, band * 0.68));
  const barLabelPx = Math.max(36, Math.min(120, Math.max(0, ...data.map((d) => labelFormat(d.label).length)) * CHAR_PX + 10));
  const labelEvery = Math.max(1, Math.ceil((data.length * barLabelPx) / innerW));
  const summary = `${title}: ${data.length} bars of ${valueLabel}${partialLast ? ' (the last one a partial period)' : ''}. ${data
    .slice(0, 12)
    .map((d) => `${labelFormat(d.label)} ${format(d.value)}`)
    .join(', ')}${data.length > 12 ? '…' : ''}`;

  return (
    <div ref={ref} className="chart-box">
      <ChartFrame
        title={title}
        summary={summary}
        showTitle={showTitle}
        legend={partialLast ? <PartialNote /> : undefined}
        table={
          <table className="table table-compact">
            <thead>
              <tr>
                <th scope="col">Label</th>
                <th scope="col" className="num">
                  {valueLabel}
                </th>
              </tr>
            </thead>
            <tbody>
              {data.map((d, i) => (
                <tr key={i}>
                  <td>{labelFormat(d.label)}</td>
                  <td className="num">{format(d.value)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        }
      >
        <svg className="chart-svg" width={w} height={height} viewBox={`0 0 ${w} ${height}`} role="img" aria-label={summary} data-chart="bar">
          <defs>
            <clipPath id={clipId}>
              <rect x={margin.left} y={margin.top - 4} width={innerW} height={innerH + 4} />
            </clipPath>
          </defs>
          {ticks.map((t, i) => (
            <g key={t}>
              <line className={t === 0 ? 'chart-axis' : 'chart-grid'} x1={margin.left} x2={w - margin.right} y1={y(t)} y2={y(t)} />
              <text className="chart-tick" x={margin.left - 8} y={y(t)} dy="0.32em" textAnchor="end">
                {tickText[i]}
              </text>
            </g>
          ))}
          <g clipPath={`url(#${clipId})`}>
            {data.map((d, i) => {
              const x = margin.left + band * i + (band - barW) / 2;
              const top = y(Math.max(0, d.value));
              const h = Math.max(d.value === 0 ? 0 : 1, Math.abs(y(d.value) - y(0)));
              const partial = partialLast && i === data.length - 1;
              return (
                <rect
                  key={i}
                  className={`chart-bar${hover === i ? ' is-active' : ''}${partial ? ' is-partial' : ''}`}
                  x={x}
                  y={top}
                  width={barW}
                  height={h}
                  rx={Math.min(4, barW / 4)}
                  onMouseEnter={() => setHover(i)}
                  onMouseLeave={() => setHover(null)}
                  data-label={d.label}
                  data-value={d.value}
                  {...(partial ? { 'data-partial': 'true' } : {})}
                >
                  <title>{`${labelFormat(d.label)} · ${valueLabel}: ${format(d.value)}${partial ? ' (partial period, still in progress)' : ''}`}</title>
                </rect>
              );
            })}
          </g>
          {data.map((d, i) =>
            i % labelEvery === 0 ? (
              <text key={i} className="chart-label" x={margin.left + band * i + band / 2} y={height - margin.bottom + 18} textAnchor="middle">
                {truncate(labelFormat(d.label), band * labelEvery - 4)}
              </text>
            ) : null,
          )}
          {hover !== null && data[hover] && (
            <text className="chart-value" x={margin.left + band * hover + band / 2} y={y(Math.max(0, data[hover].value)) - 6} textAnchor="middle">
              {`${valueLabel}: ${format(data[hover].value)}`}
            </text>
          )}
        </svg>
      </ChartFrame>
    </div>
  );
}

export interface LineSeries {
  name: string;
  values: (number | null)[];
  dashed?: boolean;
}

export interface Band {
  name: string;
  lower: (number | null)[];
  upper: (number | null)[];
}

/**
 * Lines over evenly spaced labels (time buckets or steps), each point a `circle.chart-point`; optional
 * shaded bands (prediction intervals) and highlighted points (anomalies).
 */
export function LineChart({
  labels,
  series,
  bands = [],
  highlights = [],
  title,
  height = 260,
  format = formatNumber,
  labelFormat = (s: string) => s,
  showPoints = true,
  area = false,
  partialLast = false,
}: {
  /** Fills the space under each line (an area chart). */
  area?: boolean;
  /** The last label is a period still in progress: its segment is dashed and its point hollow, and a note says so. */
  partialLast?: boolean;
  labels: string[];
  series: LineSeries[];
  bands?: Band[];
  highlights?: { index: number; value: number; label: string }[];
  title: string;
  height?: number;
  format?: (n: number) => string;
  labelFormat?: (s: string) => string;
  showPoints?: boolean;
}) {
  const [ref, width] = useWidth<HTMLDivElement>();
  const [hover, setHover] = useState<number | null>(null);
  const all = [...series.flatMap((s) => s.values), ...bands.flatMap((b) => [...b.lower, ...b.upper])].filter((v): v is number => v !== null && Number.isFinite(v));
  const min = all.length ? Math.min(...all) : 0;
  const max = all.length ? Math.max(...all) : 1;
  const ticks = niceTicks(
    min >= 0 && min < max * 0.35 ? 0 : min,
    max,
    5,
    all.every((v) => Number.isInteger(v)),
  );
  const lo = ticks[0]!;
  const hi = ticks[ticks.length - 1]!;
  const tickText = ticks.map((t) => formatCompact(t));
  const margin = { top: 16, right: 16, bottom: 34, left: Math.max(...tickText.map((t) => t.length)) * CHAR_PX + 14 };
  const w = Math.max(160, width);
  const innerW = w - margin.left - margin.right;
  const innerH = height - margin.top - margin.bottom;
  const n = Math.max(1, labels.length);
  const x = (i: number) => margin.left + (n === 1 ? innerW / 2 : (i / (n - 1)) * innerW);
  const y = (v: number) => margin.top + innerH - ((v - lo) / (hi - lo || 1)) * innerH;
  const labelPx = Math.max(40, Math.min(140, Math.max(0, ...labels.map((l) => labelFormat(l).length)) * CHAR_PX + 14));
  const labelEvery = Math.max(1, Math.ceil((n * labelPx) / innerW));
  // The first and last labels are anchored at their start and end, so a centred neighbour needs 1.5 widths from them.
  const lastShown = (n - 1) % labelEvery === 0;
  const crowdsEdge = (i: number) => (i > 0 && i < n - 1 && x(i) - x(0) < labelPx * 1.5) || (lastShown && i > 0 && i < n - 1 && x(n - 1) - x(i) < labelPx * 1.5);

  const path = (values: (number | null)[]) => {
    let d = '';
    let pen = false;
    values.forEach((v, i) => {
      if (v === null || !Number.isFinite(v)) {
        pen = false;
        return;
      }
      d += `${pen ? 'L' : 'M'}${x(i).toFixed(1)},${y(v).toFixed(1)}`;
      pen = true;
    });
    return d;
  };
  // The last period, when partial, is drawn on its own (dashed) from the one before it.
  const solidValues = (values: (number | null)[]) => (partialLast && values.length > 1 ? values.slice(0, -1) : values);
  const partialValues = (values: (number | null)[]) => values.map((v, i) => (i >= values.length - 2 ? v : null));
  const fill = (values: (number | null)[]) => {
    const idx = values.map((v, i) => (v !== null && Number.isFinite(v) ? i : -1)).filter((i) => i >= 0);
    if (idx.length < 2) return '';
    const base = y(Math.max(lo, Math.min(hi, 0)));
    return `M${x(idx[0]!).toFixed(1)},${base.toFixed(1)}${idx.map((i) => `L${x(i).toFixed(1)},${y(values[i]!).toFixed(1)}`).join('')}L${x(idx[idx.length - 1]!).toFixed(1)},${base.toFixed(1)}Z`;
  };
  const bandArea = (b: Band) => {
    const idx = b.lower.map((v, i) => (v !== null && b.upper[i] !== null && b.upper[i] !== undefined ? i : -1)).filter((i) => i >= 0);
    if (idx.length < 2) return '';
    const top = idx.map((i, k) => `${k ? 'L' : 'M'}${x(i).toFixed(1)},${y(b.upper[i]!).toFixed(1)}`).join('');
    const bottom = [...idx]
      .reverse()
      .map((i) => `L${x(i).toFixed(1)},${y(b.lower[i]!).toFixed(1)}`)
      .join('');
    return `${top}${bottom}Z`;
  };
  const summary = `${title}: ${series.map((s) => s.name).join(', ')} over ${labels.length} points${labels.length ? `, from ${labelFormat(labels[0]!)} to ${labelFormat(labels[labels.length - 1]!)}` : ''}${partialLast ? ' (the last one a partial period)' : ''}.`;
  const onMove = (e: MouseEvent<SVGRectElement>) => {
    const box = e.currentTarget.getBoundingClientRect();
    const rel = (e.clientX - box.left) / Math.max(1, box.width);
    setHover(Math.max(0, Math.min(n - 1, Math.round(rel * (n - 1)))));
  };

  return (
    <div ref={ref} className="chart-box">
      <ChartFrame
        title={title}
        summary={summary}
        legend={
          <>
            {series.length + bands.length > 1 ? (
              <ul className="chart-legend">
                {series.map((s, i) => (
                  <li key={s.name}>
                    <span className={`legend-swatch tone-${(i % 4) + 1}${s.dashed ? ' is-dashed' : ''}`} aria-hidden="true" />
                    {s.name}
                  </li>
                ))}
                {bands.map((b, i) => (
                  <li key={b.name}>
                    <span className={`legend-swatch legend-band band-${i + 1}`} aria-hidden="true" />
                    {b.name}
                  </li>
                ))}
                {highlights.length > 0 && (
                  <li>
                    <span className="legend-swatch legend-highlight" aria-hidden="true" />
                    Flagged
                  </li>
                )}
              </ul>
            ) : null}
            {partialLast && <PartialNote />}
          </>
        }
        table={
          <table className="table table-compact">
            <thead>
              <tr>
                <th scope="col">Point</th>
                {series.map((s) => (
                  <th key={s.name} scope="col" className="num">
                    {s.name}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {labels.map((l, i) => (
                <tr key={i}>
                  <td>{labelFormat(l)}</td>
                  {series.map((s) => (
                    <td key={s.name} className="num">
                      {s.values[i] === null || s.values[i] === undefined ? '—' : format(s.values[i]!)}
                    </td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
        }
      >
        <svg className="chart-svg" width={w} height={height} viewBox={`0 0 ${w} ${height}`} role="img" aria-label={summary} data-chart="line">
          {ticks.map((t, i) => (
            <g key={t}>
              <line className={t === 0 ? 'chart-axis' : 'chart-grid'} x1={margin.left} x2={w - margin.right} y1={y(t)} y2={y(t)} />
              <text className="chart-tick" x={margin.left - 8} y={y(t)} dy="0.32em" textAnchor="end">
                {tickText[i]}
              </text>
            </g>
          ))}
          {bands.map((b, i) => (
            <path key={b.name} className={`chart-band band-${i + 1}`} d={bandArea(b)} />
          ))}
          {area && series.map((s, i) => <path key={`a-${s.name}`} className={`chart-area tone-${(i % 4) + 1}`} d={fill(s.values)} />)}
          {series.map((s, i) => (
            <path key={s.name} className={`chart-line tone-${(i % 4) + 1}${s.dashed ? ' is-dashed' : ''}`} d={path(solidValues(s.values))} />
          ))}
          {partialLast &&
            labels.length > 1 &&
            series.map((s, i) => <path key={`p-${s.name}`} className={`chart-line chart-line-partial tone-${(i % 4) + 1}`} d={path(partialValues(s.values))} />)}
          {showPoints &&
            series.map((s, si) =>
              s.values.map((v, i) =>
                v === null || !Number.isFinite(v) ? null : (
                  <circle
                    key={`${si}-${i}`}
                    className={`chart-point tone-${(si % 4) + 1}${partialLast && i === labels.length - 1 ? ' is-partial' : ''}`}
                    cx={x(i)}
                    cy={y(v)}
                    r={hover === i ? 5 : n > 60 ? 2 : 3.5}
                    data-value={v}
                    data-series={s.name}
                    {...(partialLast && i === labels.length - 1 ? { 'data-partial': 'true' } : {})}
                  >
                    <title>{`${labelFormat(labels[i] ?? '')} · ${s.name}: ${format(v)}${partialLast && i === labels.length - 1 ? ' (partial period, still in progress)' : ''}`}</title>
                  </circle>
                ),
              ),
            )}
          {highlights.map((h) => (
            <circle key={`h${h.index}`} className="chart-highlight" cx={x(h.index)} cy={y(h.value)} r={6}>
              <title>{h.label}</title>
            </circle>
          ))}
          {labels.map((l, i) =>
            i % labelEvery === 0 && !crowdsEdge(i) ? (
              <text key={i} className="chart-label" x={x(i)} y={height - margin.bottom + 18} textAnchor={n > 1 && i === 0 ? 'start' : n > 1 && i === n - 1 ? 'end' : 'middle'}>
                {truncate(labelFormat(l), labelPx * labelEvery - 6)}
              </text>
            ) : null,
          )}
          {hover !== null && (
            <g className="chart-hover" aria-hidden="true">
              <line className="chart-crosshair" x1={x(hover)} x2={x(hover)} y1={margin.top} y2={margin.top + innerH} />
              <text className="chart-value" x={Math.min(Math.max(x(hover), margin.left + 60), w - margin.right - 60)} y={margin.top - 4} textAnchor="middle">
                {`${labelFormat(labels[hover] ?? '')}${partialLast && hover === labels.length - 1 ? ' (partial)' : ''} · ${series
                  .filter((s) => s.values[hover] !== null && s.values[hover] !== undefined)
                  .map((s) => `${s.name}: ${format(s.values[hover]!)}`)
                  .join(' · ')}`}
              </text>
            </g>
          )}
          <rect className="chart-hit" x={margin.left} y={margin.top} width={innerW} height={innerH} onMouseMove={onMove} onMouseLeave={() => setHover(null)} />
        </svg>
      </ChartFrame>
    </div>
  );
}

/** A horizontal meter (SVG, so no inline styles are needed under the CSP). */
export function Meter({ value, max, label, valueText }: { value: number; max: number; label: string; valueText: string }) {
  const ratio = max > 0 ? Math.min(1, Math.max(0, value / max)) : 0;
  const tone = ratio >= 0.9 ? 'danger' : ratio >= 0.7 ? 'warning' : 'ok';
  return (
    <div className="meter">
      <svg
        width="100%"
        height="12"
        viewBox="0 0 100 12"
        preserveAspectRatio="none"
        role="meter"
        aria-label={label}
        aria-valuemin={0}
        aria-valuemax={max}
        aria-valuenow={value}
        aria-valuetext={valueText}
      >
        <rect className="meter-track" x="0" y="0" width="100" height="12" rx="6" />
        {ratio > 0 && <rect className={`meter-fill meter-${tone}`} x="0" y="0" width={Math.max(2, ratio * 100)} height="12" rx="6" />}
      </svg>
    </div>
  );
}
