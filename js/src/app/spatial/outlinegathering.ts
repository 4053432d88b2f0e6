/**
 * A large tissue's outlines by tile (outlinetiles.ts): zoomed out, the stage draws the circles
 * the cells reply sent; zoomed in until a cell is worth outlining, it asks for the outline
 * tiles in view and draws the polygons gathered so far (in either tier, as polygons sent at
 * once are drawn); zoomed out again, the circles. Nothing is asked while the stage is off screen.
 */

import type { Region, ViewState } from './camera';
import { tilesInView, type OutlineTileSet } from './outlinetiles';
import type { CanvasData } from './raster';

type Shapes = NonNullable<CanvasData['shapes']>;

/** What the gathering reads of its stage, and how it hands it shapes to draw. */
export type ShapesHost = {
  readonly data: CanvasData;
  readonly viewState: ViewState | null;
  readonly node: HTMLElement;
  readonly offScreen: boolean;
  readonly disposed: boolean;
  region(): Region;
  /** Draw the cells as `shapes` from now on; `cellSize`: a typical cell's width (0 for circles). */
  drawShapes(shapes: Shapes, cellSize: number): void;
};

export class OutlineGathering {
  /**
   * `circles`: the tissue's circles as the reply sent them; `size`: its typical cell width in
   * data units (twice the median radius), what decides when outlines are worth asking.
   */
  constructor(
    private readonly tiles: OutlineTileSet,
    private readonly circles: Shapes,
    readonly size: number,
    private readonly host: ShapesHost
  ) {}

  /** The outline tiles the view asks for now (none while a cell is under OUTLINE_PX across). */
  private wanted(): ReturnType<typeof tilesInView> {
    const vs = this.host.viewState;
    return vs ? tilesInView(this.tiles.grid, this.host.region(), Math.pow(2, vs.zoom), this.size) : [];
  }

  /** The view changed (or came on screen): ask for what it wants, and draw circles or outlines. */
  gather(): void {
    const host = this.host;
    const circles = this.circles;
    if (host.offScreen) {
      return;
    }
    const wanted = this.wanted();
    host.node.dataset.outlineTiles = String(wanted.length);
    if (!wanted.length) {
      if (host.data.shapes !== circles) {
        host.drawShapes(circles, 0);
      }
      return;
    }
    const tiles = this.tiles;
    tiles.want(wanted).then(
      fresh => {
        if (host.disposed || !this.wanted().length) {
          return; // zoomed out meanwhile: the circles stay
        }
        if (tiles.size > 0 && (fresh || host.data.shapes === circles)) {
          host.drawShapes({ kind: 'polygons', ...tiles.polygons() }, this.size);
        }
      },
      () => undefined // a tile that failed leaves its cells as circles; the next view change asks again
    );
  }
}
