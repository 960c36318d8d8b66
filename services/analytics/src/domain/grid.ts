import { GRID_COLUMNS, MAX_GRID_ROW } from '@dap/contracts';
import type { TileDoc } from '../persistence/dashboard.repository.ts';
import { bodyInvalid } from './errors.ts';

const overlaps = (a: TileDoc, b: TileDoc) => a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;

/** Reading order: by row, then column. */
export const readingOrder = (tiles: TileDoc[]): TileDoc[] => [...tiles].sort((a, b) => a.y - b.y || a.x - b.x);

/** The first row below every tile. */
export const bottomOf = (tiles: readonly TileDoc[]): number => tiles.reduce((max, t) => Math.max(max, t.y + t.h), 0);

/**
 * Where a tile without a place goes: the first place, in reading order, where it overlaps nothing (beside the
 * last tile when the row has room, else below), so pinned insights fill the grid as people read it.
 */
export function firstFreePlace(tiles: readonly TileDoc[], w: number, h: number): { x: number; y: number } {
  const bottom = bottomOf(tiles);
  for (let y = 0; y < bottom; y++) {
    for (let x = 0; x + w <= GRID_COLUMNS; x++) {
      const spot = { id: '', insightId: '', x, y, w, h };
      if (!tiles.some((t) => overlaps(spot, t))) return { x, y };
    }
  }
  return { x: 0, y: bottom };
}

/**
 * The layout with `placed` where it was put and every tile it would overlap moved down just enough (and so on
 * below them), as a dashboard grid does when a tile is dropped on others. Tiles it does not touch keep their
 * places. A layout that would run past the last row is refused, naming `y`.
 */
export function placeTile(tiles: readonly TileDoc[], placed: TileDoc): TileDoc[] {
  const done: TileDoc[] = [placed];
  for (const t of readingOrder(tiles.filter((x) => x.id !== placed.id))) {
    let y = t.y;
    for (let hit = done.find((d) => overlaps({ ...t, y }, d)); hit; hit = done.find((d) => overlaps({ ...t, y }, d))) y = hit.y + hit.h;
    done.push({ ...t, y });
  }
  const deepest = done.reduce((max, t) => Math.max(max, t.y), 0);
  if (deepest > MAX_GRID_ROW) {
    throw bodyInvalid([{ path: 'y', message: `the tiles would run past row ${MAX_GRID_ROW}, the last a dashboard has; place the tile higher or remove tiles` }]);
  }
  return readingOrder(done);
}
