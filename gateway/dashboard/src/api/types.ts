/**
 * The API's types come straight from the contracts (type-only imports: nothing of zod reaches the bundle), and
 * so do the contracts' plain lists (lists.ts has no dependency). The contracts are imported file by file, not as
 * `@dap/contracts`: its index also holds Node-only code (node:crypto, Buffer) that this tsconfig (no Node types)
 * cannot check and the bundle must not hold. The few lists the forms need with labels are repeated here, checked
 * against the contracts at compile time, so a new measure, granularity or operator fails the type check until
 * the dashboard offers it.
 */
import type { ApiKeyDto, Column, OverviewDto, WebhookDto } from '../../../../libs/contracts/src/api/index.ts';
import type { MEASURE_OPS, GRANULARITIES, FILTER_OPS, WEBHOOK_STATUSES } from '../../../../libs/contracts/src/api/index.ts';

export type {
  AccountDto,
  ApiKeyDto,
  DeliveryDto,
  DeliveryDetailDto,
  MetricsDto,
  ModelDto,
  ModelVersionDto,
  PredictionDto,
  Problem,
  ReportDto,
  ReportSummaryDto,
  QueryEstimateDto,
  QueryResultDto,
  InsightDto,
  DashboardDto,
  DashboardSummaryDto,
  SessionDto,
  SourceDto,
  UsageDto,
  UsageStatsDto,
  UsageWindow,
  WebhookDto,
  UpdateWebhookBody,
  AnalyticsQuery,
  Filter,
  SourceType,
  Column,
} from '../../../../libs/contracts/src/api/index.ts';
export type { Plan, Scope } from '../../../../libs/contracts/src/plans.ts';
export type { PublicEventType } from '../../../../libs/contracts/src/events.ts';
export {
  PLAN_LIMITS,
  SCOPES,
  PUBLIC_EVENT_TYPES as EVENT_TYPES,
  WEBHOOK_FILTER_OPERATORS,
  MAX_WEBHOOK_FILTER_DEPTH,
  MAX_WEBHOOK_FILTER_CONDITIONS,
  MAX_WEBHOOK_RATE_LIMIT_PER_SECOND,
} from '../../../../libs/contracts/src/lists.ts';

export type ColumnType = Column['type'];
export type MeasureOp = (typeof MEASURE_OPS)[number];
export type Granularity = (typeof GRANULARITIES)[number];
export type FilterOp = (typeof FILTER_OPS)[number];
export type WebhookStatus = (typeof WEBHOOK_STATUSES)[number];

export interface Page<T> {
  data: T[];
  hasMore: boolean;
  nextCursor: string | null;
}

/** The overview, with the per-day request history that newer analytics services add. */
export type Overview = OverviewDto & { apiRequestsPerDay?: { date: string; requests: number }[] };
export type ApiKeyCreated = ApiKeyDto & { secret: string };
export type WebhookCreated = WebhookDto & { secret: string };
export type WebhookSecretRotated = WebhookDto & { secret: string; previousSecretExpiresAt: string };

/** True only when A and B have exactly the same members. */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const exhaustive = <T extends true>(_: T) => undefined;

export const MEASURES: readonly { op: MeasureOp; label: string; needsField: boolean; numeric: boolean }[] = [
  { op: 'count', label: 'Count', needsField: false, numeric: false },
  { op: 'countDistinct', label: 'Count distinct', needsField: true, numeric: false },
  { op: 'sum', label: 'Sum', needsField: true, numeric: true },
  { op: 'avg', label: 'Average', needsField: true, numeric: true },
  { op: 'min', label: 'Minimum', needsField: true, numeric: false },
  { op: 'max', label: 'Maximum', needsField: true, numeric: false },
  { op: 'median', label: 'Median', needsField: true, numeric: true },
  { op: 'p90', label: '90th percentile', needsField: true, numeric: true },
  { op: 'p99', label: '99th percentile', needsField: true, numeric: true },
];
exhaustive<Same<(typeof MEASURES)[number]['op'], MeasureOp>>(true);

export const GRANULARITY_LIST = ['hour', 'day', 'week', 'month', 'year'] as const;
exhaustive<Same<(typeof GRANULARITY_LIST)[number], Granularity>>(true);

export const FILTER_OPERATORS: readonly { op: FilterOp; label: string; value: 'one' | 'list' | 'none' }[] = [
  { op: 'eq', label: 'equals', value: 'one' },
  { op: 'ne', label: 'does not equal', value: 'one' },
  { op: 'gt', label: 'greater than', value: 'one' },
  { op: 'gte', label: 'at least', value: 'one' },
  { op: 'lt', label: 'less than', value: 'one' },
  { op: 'lte', label: 'at most', value: 'one' },
  { op: 'in', label: 'is one of', value: 'list' },
  { op: 'notIn', label: 'is none of', value: 'list' },
  { op: 'contains', label: 'contains', value: 'one' },
  { op: 'startsWith', label: 'starts with', value: 'one' },
  { op: 'isNull', label: 'is empty', value: 'none' },
  { op: 'isNotNull', label: 'is not empty', value: 'none' },
];
exhaustive<Same<(typeof FILTER_OPERATORS)[number]['op'], FilterOp>>(true);
