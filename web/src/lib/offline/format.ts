// Sizes for people: 512 KB, 3.4 MB, 120 MB, 1.5 GB (powers of 1024, as browsers report them).
export function bytes(value: number): string {
  const n = Math.max(0, value);
  if (n < 1024 ** 2) return `${Math.round(n / 1024)} KB`;
  if (n < 1024 ** 3) return `${(n / 1024 ** 2).toFixed(n < 10 * 1024 ** 2 ? 1 : 0)} MB`;
  return `${(n / 1024 ** 3).toFixed(n < 10 * 1024 ** 3 ? 1 : 0).replace(/\.0$/, '')} GB`;
}
