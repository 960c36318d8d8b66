import { GRID_COLUMNS, MAX_DASHBOARD_TILES, newId, type CallerContext, type InsightQuery } from '@dap/contracts';
import type { DashboardDoc, DashboardRepository, TileDoc } from '../persistence/dashboard.repository.ts';
import type { InsightChart, InsightDoc, InsightRepository } from '../persistence/insight.repository.ts';
import { bodyInvalid, dashboardChanged, dashboardFull, dashboardNotFound, insightNotFound, tileNotFound } from './errors.ts';
import { firstFreePlace, placeTile } from './grid.ts';
import type { ReportsService, UnsavedResult } from './reports.service.ts';

/** A dashboard with each tile's insight; tiles of insights deleted meanwhile are left out. */
export interface DashboardView {
  dashboard: DashboardDoc;
  tiles: (TileDoc & { insight: InsightDoc })[];
}

/** Tries of a tile edit against concurrent edits of the same dashboard before answering 409. */
const LAYOUT_ATTEMPTS = 5;

/** Saved insights (named queries) and the dashboards they are pinned to. */
export class InsightsService {
  private readonly deps: { insights: InsightRepository; dashboards: DashboardRepository; reports: ReportsService };

  constructor(deps: { insights: InsightRepository; dashboards: DashboardRepository; reports: ReportsService }) {
    this.deps = deps;
  }

  createInsight(accountId: string, body: { name: string; query: InsightQuery; chart: InsightChart }): Promise<InsightDoc> {
    const now = new Date();
    return this.deps.insights.insert(accountId, { _id: newId('ins'), ...body, createdAt: now, updatedAt: now });
  }

  listInsights(accountId: string, opts: { limit: number; before?: string }): Promise<InsightDoc[]> {
    return this.deps.insights.list(accountId, opts);
  }

  async getInsight(accountId: string, id: string): Promise<InsightDoc> {
    const insight = await this.deps.insights.findById(accountId, id);
    if (!insight) throw insightNotFound();
    return insight;
  }

  async updateInsight(accountId: string, id: string, set: { name?: string; query?: InsightQuery; chart?: InsightChart }): Promise<InsightDoc> {
    const insight = await this.deps.insights.update(accountId, id, set);
    if (!insight) throw insightNotFound();
    return insight;
  }

  /**
   * Deletes the insight, then takes its tiles off the account's dashboards. A crash between the two leaves
   * tiles of a missing insight, which every read of a dashboard leaves out, and the next tile edit drops.
   */
  async deleteInsight(accountId: string, id: string): Promise<void> {
    if (!(await this.deps.insights.delete(accountId, id))) throw insightNotFound();
    await this.deps.dashboards.removeInsight(accountId, id);
  }

  async runInsight(caller: CallerContext, id: string): Promise<UnsavedResult> {
    const insight = await this.getInsight(caller.accountId, id);
    return this.deps.reports.runUnsaved(caller, insight.query);
  }

  async createDashboard(accountId: string, name: string): Promise<DashboardView> {
    const now = new Date();
    const dashboard = await this.deps.dashboards.insert(accountId, { _id: newId('dsh'), name, tiles: [], version: 0, createdAt: now, updatedAt: now });
    return { dashboard, tiles: [] };
  }

  listDashboards(accountId: string, opts: { limit: number; before?: string }): Promise<DashboardDoc[]> {
    return this.deps.dashboards.list(accountId, opts);
  }

  async getDashboard(accountId: string, id: string): Promise<DashboardView> {
    const dashboard = await this.deps.dashboards.findById(accountId, id);
    if (!dashboard) throw dashboardNotFound();
    return this.view(accountId, dashboard);
  }

  async renameDashboard(accountId: string, id: string, name: string): Promise<DashboardView> {
    const dashboard = await this.deps.dashboards.rename(accountId, id, name);
    if (!dashboard) throw dashboardNotFound();
    return this.view(accountId, dashboard);
  }

  async deleteDashboard(accountId: string, id: string): Promise<void> {
    if (!(await this.deps.dashboards.delete(accountId, id))) throw dashboardNotFound();
  }

  /** Pins an insight: at (x, y), or at the first free place in reading order; the tiles it lands on move down. */
  async addTile(accountId: string, id: string, tile: { insightId: string; x?: number; y?: number; w: number; h: number }): Promise<DashboardView> {
    await this.getInsight(accountId, tile.insightId);
    const tileId = newId('til');
    return this.editTiles(accountId, id, (tiles) => {
      if (tiles.length >= MAX_DASHBOARD_TILES) throw dashboardFull(MAX_DASHBOARD_TILES);
      const { x, y } = tile.x !== undefined && tile.y !== undefined ? { x: tile.x, y: tile.y } : firstFreePlace(tiles, tile.w, tile.h);
      return placeTile(tiles, { id: tileId, insightId: tile.insightId, x, y, w: tile.w, h: tile.h });
    });
  }

  async moveTile(accountId: string, id: string, tileId: string, to: { x?: number; y?: number; w?: number; h?: number }): Promise<DashboardView> {
    return this.editTiles(accountId, id, (tiles) => {
      const tile = tiles.find((t) => t.id === tileId);
      if (!tile) throw tileNotFound();
      const moved = { ...tile, ...to };
      // x and w are checked together here, as a body may change only one of them.
      if (moved.x + moved.w > GRID_COLUMNS) {
        const field = to.w !== undefined ? 'w' : 'x';
        throw bodyInvalid([
          { path: field, message: `the tile would run past the grid's ${GRID_COLUMNS} columns: x + w must be at most ${GRID_COLUMNS} (x is ${moved.x}, w is ${moved.w})` },
        ]);
      }
      return placeTile(tiles, moved);
    });
  }

  async removeTile(accountId: string, id: string, tileId: string): Promise<DashboardView> {
    return this.editTiles(accountId, id, (tiles) => {
      if (!tiles.some((t) => t.id === tileId)) throw tileNotFound();
      return tiles.filter((t) => t.id !== tileId);
    });
  }

  /**
   * Reads the layout, changes it and writes it back only if no other edit came between (the version), trying
   * again a few times: tile edits are rare, and a read-modify-write keeps the grid's rules in one place.
   * Tiles whose insight is gone are dropped on the way.
   */
  private async editTiles(accountId: string, id: string, change: (tiles: TileDoc[]) => TileDoc[]): Promise<DashboardView> {
    for (let attempt = 0; attempt < LAYOUT_ATTEMPTS; attempt++) {
      const dashboard = await this.deps.dashboards.findById(accountId, id);
      if (!dashboard) throw dashboardNotFound();
      const live = await this.deps.insights.findMany(
        accountId,
        dashboard.tiles.map((t) => t.insightId),
      );
      const next = change(dashboard.tiles.filter((t) => live.has(t.insightId)));
      const written = await this.deps.dashboards.setTiles(accountId, id, dashboard.version, next);
      if (written) return this.view(accountId, written);
    }
    throw dashboardChanged();
  }

  private async view(accountId: string, dashboard: DashboardDoc): Promise<DashboardView> {
    const insights = await this.deps.insights.findMany(
      accountId,
      dashboard.tiles.map((t) => t.insightId),
    );
    const tiles = dashboard.tiles.flatMap((t) => {
      const insight = insights.get(t.insightId);
      return insight ? [{ ...t, insight }] : [];
    });
    return { dashboard, tiles };
  }
}
