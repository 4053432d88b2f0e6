/**
 * Which render tier draws this page's spatial views, decided once here: WebGL2 or not (probed
 * once), a hardware renderer (the GPU tier: deck.gl's stock layers over every cell) or a
 * software one (SwiftShader, llvmpipe: the software tier, which saves per cell), unless the page
 * forces one. The layer factories of each tier are in layers/index.ts.
 */

import type { Tier } from './layers/scene';

export type { Tier };

/** Whether this browser can draw with WebGL2 (probed once; the probe's context is released at once). */
let webgl: boolean | null = null;
/** Whether the probe's renderer is a software one (SwiftShader, llvmpipe): what the view then saves on. */
let software = false;
export function webglAvailable(): boolean {
  if (webgl === null) {
    try {
      const c = document.createElement('canvas');
      const gl = c.getContext('webgl2') as WebGL2RenderingContext | null;
      webgl = !!gl && typeof gl.getParameter === 'function';
      if (gl && webgl) {
        const info = gl.getExtension('WEBGL_debug_renderer_info');
        const renderer = String(gl.getParameter(info ? info.UNMASKED_RENDERER_WEBGL : gl.RENDERER) ?? '');
        software = /swiftshader|llvmpipe|softpipe|software/i.test(renderer);
      }
      gl?.getExtension('WEBGL_lose_context')?.loseContext();
    } catch {
      webgl = false;
    }
  }
  return webgl;
}

/*
 * How the view draws. "gpu": deck.gl's stock layers over every cell, picked on the GPU (a
 * hardware WebGL2). "software": a software renderer (SwiftShader, llvmpipe) runs the vertex
 * shader on the CPU, so a frame costs per cell: geometry of the cells near the view while few
 * are (GEOMETRY_BUDGET), a CPU raster of them beyond, picked through the CPU grid.
 */
const TIERS: readonly Tier[] = ['gpu', 'software'];
const TIER_KEY = 'sds-tier';

/**
 * The tier a page forces with `?sds-tier=gpu|software` (tests, comparisons on one machine).
 * Read when this module loads and kept for the tab's session: JupyterLab's router rewrites the
 * address soon after, and a reload should keep the choice.
 */
function forcedTier(): Tier | null {
  try {
    const asked = new URLSearchParams(window.location.search).get(TIER_KEY);
    if (asked !== null) {
      if (TIERS.includes(asked as Tier)) {
        window.sessionStorage.setItem(TIER_KEY, asked);
      } else {
        window.sessionStorage.removeItem(TIER_KEY); // anything else: back to the probe's answer
      }
    }
    const kept = window.sessionStorage.getItem(TIER_KEY);
    return TIERS.includes(kept as Tier) ? (kept as Tier) : null;
  } catch {
    return null; // no window (tests in Node) or no storage
  }
}

let forced: Tier | null | undefined = typeof window !== 'undefined' ? forcedTier() : undefined;

/** The tier of this page: the forced one, else by the probe's renderer (null without WebGL). */
export function renderTier(): Tier | null {
  if (!webglAvailable()) {
    return null;
  }
  if (forced === undefined) {
    forced = forcedTier();
  }
  return forced ?? (software ? 'software' : 'gpu');
}

/** For tests: force a tier (null: the probe's answer). */
export function setTier(tier: Tier | null): void {
  forced = tier;
}

let deckModule: Promise<typeof import('./deck')> | null = null;

/**
 * Start loading deck.gl (and probe WebGL) ahead of the data: a figure calls it when its
 * request starts, so that the first draw after the data arrive does not wait for the bundle
 * (about 0.3 s of software WebGL's first draw at 1M cells was the import). Null without WebGL.
 */
export function preloadDeck(): Promise<typeof import('./deck')> | null {
  if (!webglAvailable()) {
    return null;
  }
  deckModule ??= import('./deck').catch((err: unknown) => {
    deckModule = null; // tried again by the next figure
    throw err;
  });
  return deckModule;
}

/** For tests: force the probe's answer (null: probe again). */
export function setWebglAvailable(value: boolean | null): void {
  webgl = value;
}

/** Whether the probe's renderer is a software one (then frames are drawn without multisampling). */
export function softwareRenderer(): boolean {
  return webglAvailable() && software;
}

export { measure, now } from '../shared/timing';
