// Sizes and counts for the admin pages.
const UNITS = ['B', 'KB', 'MB', 'GB', 'TB', 'PB'] as const;

/** Bytes in the largest unit under 1000 of it, decimal (as disks are sold): "1.4 GB". */
export function bytes(value: number | null | undefined): string {
  if (value == null || !Number.isFinite(value) || value < 0) return '–';
  let unit = 0;
  let scaled = value;
  while (scaled >= 1000 && unit < UNITS.length - 1) {
    scaled /= 1000;
    unit++;
  }
  const digits = unit === 0 || scaled >= 100 ? 0 : 1;
  return `${scaled.toFixed(digits)} ${UNITS[unit]}`;
}

/** A whole number with the reader's grouping: "12,345". */
export function whole(value: number): string {
  return Math.round(value).toLocaleString();
}

/** A duration in seconds as hours and minutes: "12 h 05 min", "7 min". */
export function hours(seconds: number): string {
  const minutes = Math.round(Math.max(0, seconds) / 60);
  const h = Math.floor(minutes / 60);
  const m = minutes % 60;
  return h > 0 ? `${h} h ${String(m).padStart(2, '0')} min` : `${m} min`;
}
