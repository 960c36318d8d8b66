import type { TileDoc } from '../persistence/dashboard.repository.ts';
import { firstFreePlace, placeTile } from './grid.ts';

const tile = (id: string, x: number, y: number, w: number, h: number): TileDoc => ({ id, insightId: `ins_${id}`, x, y, w, h });
const places = (tiles: TileDoc[]) => tiles.map((t) => [t.id, t.x, t.y, t.w, t.h]);

describe('placeTile', () => {
  it('pushes the tiles it lands on down just enough, cascading, and leaves the others alone', () => {
    const tiles = [tile('a', 0, 0, 6, 4), tile('b', 6, 0, 6, 2), tile('c', 0, 4, 12, 3), tile('d', 6, 2, 6, 2)];
    // A tile dropped at the top left over a: a goes below it, c below a, b and d (right half) stay.
    const out = placeTile(tiles, tile('n', 0, 0, 6, 3));
    expect(places(out)).toEqual([
      ['n', 0, 0, 6, 3],
      ['b', 6, 0, 6, 2],
      ['d', 6, 2, 6, 2],
      ['a', 0, 3, 6, 4],
      ['c', 0, 7, 12, 3],
    ]);
  });

  it('moves a tile already on the grid without counting it against itself', () => {
    const tiles = [tile('a', 0, 0, 6, 4), tile('b', 0, 4, 6, 4)];
    expect(places(placeTile(tiles, { ...tiles[1]!, y: 0 }))).toEqual([
      ['b', 0, 0, 6, 4],
      ['a', 0, 4, 6, 4],
    ]);
    // Positive control: a move onto a free spot moves nothing else.
    expect(places(placeTile(tiles, { ...tiles[1]!, x: 6, y: 0 }))).toEqual([
      ['a', 0, 0, 6, 4],
      ['b', 6, 0, 6, 4],
    ]);
  });

  it('refuses a layout that runs past the last row, naming y', () => {
    const tiles = [tile('a', 0, 195, 12, 6)];
    expect(() => placeTile(tiles, tile('n', 0, 190, 12, 12))).toThrow(expect.objectContaining({ code: 'validation_failed', errors: [expect.objectContaining({ path: 'y' })] }));
  });
});

describe('firstFreePlace', () => {
  it('is the first gap in reading order, else the row below every tile', () => {
    expect(firstFreePlace([], 6, 4)).toEqual({ x: 0, y: 0 });
    expect(firstFreePlace([tile('a', 0, 0, 6, 4)], 6, 4)).toEqual({ x: 6, y: 0 });
    expect(firstFreePlace([tile('a', 0, 0, 6, 4)], 7, 4)).toEqual({ x: 0, y: 4 });
    // A gap below a short tile, beside a tall one.
    expect(firstFreePlace([tile('a', 0, 0, 6, 4), tile('b', 6, 0, 6, 1)], 6, 3)).toEqual({ x: 6, y: 1 });
  });
});
