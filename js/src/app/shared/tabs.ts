/** Keyboard rules of the WAI-ARIA tabs pattern, apart from the DOM so they are tested alone. */

/**
 * The tab index a key moves to from tab `current` of `count` (wrapping at the
 * ends), or null for keys the tab list leaves alone.
 */
export function tabKeyTarget(key: string, current: number, count: number): number | null {
  if (count <= 0 || current < 0) {
    return null;
  }
  switch (key) {
    case 'ArrowRight':
    case 'ArrowDown':
      return (current + 1) % count;
    case 'ArrowLeft':
    case 'ArrowUp':
      return (current - 1 + count) % count;
    case 'Home':
      return 0;
    case 'End':
      return count - 1;
    default:
      return null;
  }
}
