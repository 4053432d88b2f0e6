/**
 * Which pyramid level a view needs: the rule the image's tiles (tiles.ts), the labels' tiles
 * (labeltiles.ts) and the first image request (cellstore.ts) share.
 */

import type { Bounds, ImageLevel } from '../shared/types';

/** Screen pixels per image pixel beyond which a finer level is wanted (the overview's too). */
export const DETAIL_AT = 1.5;
/** Image pixels of `level` per unit of the coordinate system (along x). */
export function pixelsPerUnit(level: { width: number; bounds: Bounds }): number {
  return level.width / Math.max(level.bounds[2] - level.bounds[0], 1e-12);
}

/**
 * The coarsest level whose pixel spans at most DETAIL_AT screen pixels at `screenPerUnit`
 * (screen px per unit), else the finest (0): the least data that still looks sharp.
 */
export function levelFor(levels: ImageLevel[], screenPerUnit: number): number {
  for (let i = levels.length - 1; i >= 0; i--) {
    if (screenPerUnit / pixelsPerUnit(levels[i]) <= DETAIL_AT) {
      return i;
    }
  }
  return 0;
}

/**
 * The pyramid level of the first image request: the coarsest that looks sharp (`levelFor`) with the
 * figure's `bounds` fitted across `screenWidth` device pixels (the canvas's CSS width times
 * devicePixelRatio: no more than the screen can show), never finer than the server's default
 * overview (`image.level`, the finest within its bound; detail comes by tile, for what is on
 * screen). Null when that default is the choice, or when the image has no level to choose.
 */
export function overviewLevel(image: { levels?: ImageLevel[]; level?: number | null }, bounds: Bounds, screenWidth: number): number | null {
  const { levels, level } = image;
  if (!levels?.length || level === null || level === undefined || !(screenWidth > 0)) {
    return null;
  }
  const wanted = Math.max(levelFor(levels, screenWidth / Math.max(bounds[2] - bounds[0], 1e-12)), level);
  return wanted === level ? null : wanted;
}

