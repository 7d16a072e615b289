// Which synced lyrics line is current at a playback time.
export interface TimedLine {
  start_ms: number;
  text: string;
}

/**
 * The index of the line shown at `timeMs` (the last one started), or -1 before the first.
 * `offsetMs` is the LRC offset: positive shows lines sooner. Lines are sorted by start.
 */
export function lineAt(lines: readonly TimedLine[], timeMs: number, offsetMs = 0): number {
  const t = timeMs + offsetMs;
  let low = 0;
  let high = lines.length - 1;
  let found = -1;
  while (low <= high) {
    const mid = (low + high) >> 1;
    if (lines[mid]!.start_ms <= t) {
      found = mid;
      low = mid + 1;
    } else {
      high = mid - 1;
    }
  }
  return found;
}

/** The playback time, in seconds, at which line `index` shows. */
export function lineTime(lines: readonly TimedLine[], index: number, offsetMs = 0): number {
  const line = lines[index];
  return line ? Math.max(0, (line.start_ms - offsetMs) / 1000) : 0;
}
