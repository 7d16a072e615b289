// The geometry of the admin pages' charts, kept apart from the markup so it can be tested.

export interface Slice {
  label: string;
  value: number;
}

export interface Arc extends Slice {
  /** Share of the whole, 0–1. */
  share: number;
  /** Length of the arc along the circle's stroke. */
  length: number;
  /** Where it starts along the stroke (a negative dash offset). */
  offset: number;
}

/**
 * A donut's arcs on a circle of `circumference`, in order, each as a stroke dash: its length
 * and where it starts. Negative and non-finite values count as 0; all zero gives no arcs.
 */
export function arcs(slices: readonly Slice[], circumference: number): Arc[] {
  const clean = slices.map((slice) => ({ ...slice, value: Number.isFinite(slice.value) && slice.value > 0 ? slice.value : 0 }));
  const total = clean.reduce((sum, slice) => sum + slice.value, 0);
  if (total <= 0) return [];
  let start = 0;
  return clean.map((slice) => {
    const share = slice.value / total;
    const arc = { ...slice, share, length: share * circumference, offset: -start };
    start += arc.length;
    return arc;
  });
}

/** Each value as a share of the largest (bar lengths), 0–1. */
export function shares(values: readonly number[]): number[] {
  const max = Math.max(0, ...values.filter(Number.isFinite));
  return values.map((value) => (max > 0 && Number.isFinite(value) && value > 0 ? value / max : 0));
}

/** A share as a whole percentage, never "0 %" for a non-zero share nor "100 %" short of it. */
export function percent(share: number): number {
  if (!(share > 0)) return 0;
  if (share >= 1) return 100;
  return Math.min(99, Math.max(1, Math.round(share * 100)));
}
