import type { Db } from 'mongodb';
import { TenantRepository, type TenantDoc } from '@dap/mongo';

/** A tile: an insight at a place on the dashboard's 12-column grid. */
export interface TileDoc {
  id: string;
  insightId: string;
  x: number;
  y: number;
  w: number;
  h: number;
}

export interface DashboardDoc extends TenantDoc {
  name: string;
  tiles: TileDoc[];
  /** Bumped by every change of the tiles: a layout is read, changed and written back only if no one wrote between. */
  version: number;
  createdAt: Date;
  updatedAt: Date;
}

export class DashboardRepository extends TenantRepository<DashboardDoc> {
  constructor(db: Db) {
    super(db, 'dashboards', [[{ accountId: 1, _id: -1 }], [{ accountId: 1, 'tiles.insightId': 1 }]]);
  }

  rename(accountId: string, id: string, name: string): Promise<DashboardDoc | null> {
    return this.coll.update(accountId, id, { name, updatedAt: new Date() });
  }

  /** Writes a new layout only if the dashboard is still at `version`; null when it is gone or moved on. */
  setTiles(accountId: string, id: string, version: number, tiles: TileDoc[]): Promise<DashboardDoc | null> {
    return this.coll.update(accountId, id, { tiles, version: version + 1, updatedAt: new Date() }, [], { version });
  }

  delete(accountId: string, id: string): Promise<boolean> {
    return this.coll.delete(accountId, id);
  }

  /** Takes an insight's tiles off every dashboard of the account (the insight was deleted). */
  async removeInsight(accountId: string, insightId: string): Promise<void> {
    if (!accountId) throw new Error('accountId is required');
    await this.coll.raw.updateMany({ accountId, deletedAt: null, 'tiles.insightId': insightId }, {
      $pull: { tiles: { insightId } },
      $inc: { version: 1 },
      $set: { updatedAt: new Date() },
    } as never);
  }
}
