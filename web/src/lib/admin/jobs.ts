// Reading background jobs (`GET /jobs/{id}`): their progress and result are free-form JSON
// per kind, so the known counters are read defensively, never trusted to be there.
import { t } from '../messages';

/** A job no longer changes in these states. */
export function finished(state: string): boolean {
  return state === 'succeeded' || state === 'failed';
}

/** The number at `key` of a job's progress or result (0 when absent or not a number). */
export function count(data: unknown, key: string): number {
  if (data && typeof data === 'object' && !Array.isArray(data)) {
    const value = (data as Record<string, unknown>)[key];
    if (typeof value === 'number' && Number.isFinite(value)) return value;
  }
  return 0;
}

/** A list at `key` (the first errors of a scan), or none. */
export function list(data: unknown, key: string): unknown[] {
  if (data && typeof data === 'object' && !Array.isArray(data)) {
    const value = (data as Record<string, unknown>)[key];
    if (Array.isArray(value)) return value;
  }
  return [];
}

/** Whether `key` is true. */
export function flag(data: unknown, key: string): boolean {
  return !!data && typeof data === 'object' && (data as Record<string, unknown>)[key] === true;
}

/** The text at `key`, or ''. */
export function text(data: unknown, key: string): string {
  if (data && typeof data === 'object' && !Array.isArray(data)) {
    const value = (data as Record<string, unknown>)[key];
    if (typeof value === 'string') return value;
  }
  return '';
}

export interface JobLike {
  kind: string;
  state: string;
  progress?: unknown;
  result?: unknown;
}

/** What a job reports: its result once it has one, else its progress. */
export function report(job: JobLike): unknown {
  return job.result ?? job.progress ?? null;
}

/**
 * How far a job is, 0–1, for the kinds that say (a scan: files handled of files seen; a
 * reindex or a file check: done of total); null when it cannot be told (a progress bar
 * without a value is indeterminate). A finished job is at 1.
 */
export function fraction(job: JobLike): number | null {
  if (finished(job.state)) return 1;
  const data = report(job);
  let done = 0;
  let total = 0;
  switch (job.kind) {
    case 'scan_local_folder':
      done = count(data, 'imported') + count(data, 'skipped') + count(data, 'failed');
      total = count(data, 'seen');
      break;
    case 'reindex_library':
      done = count(data, 'done');
      total = count(data, 'total');
      break;
    case 'check_files':
      done = count(data, 'checked');
      total = count(data, 'total');
      break;
    default:
      return null;
  }
  if (total <= 0) return null;
  return Math.min(1, Math.max(0, done / total));
}

/** The counters of a job as one line ("seen 12 · imported 3 …"), for any kind. */
export function summary(job: JobLike): string {
  const data = report(job);
  switch (job.kind) {
    case 'scan_local_folder':
      return t.scanCounts(count(data, 'seen'), count(data, 'imported'), count(data, 'skipped'), count(data, 'failed'));
    case 'reindex_library':
      return t.reindexCounts(count(data, 'done'), count(data, 'total'), count(data, 'changed'), count(data, 'failed'));
    case 'check_files':
      return t.checkCounts(count(data, 'checked'), count(data, 'total'), count(data, 'broken'));
    case 'cleanup_storage':
      return t.cleanupCounts(sum(data, 'orphans'), count(data, 'deleted'), count(data, 'missing_tracks'));
  }
  // Other kinds: their numeric fields as they are named.
  if (!data || typeof data !== 'object' || Array.isArray(data)) return '';
  return Object.entries(data as Record<string, unknown>)
    .filter(([, value]) => typeof value === 'number')
    .map(([key, value]) => `${key.replaceAll('_', ' ')} ${value as number}`)
    .join(' · ');
}

/** The sum of a map of counts at `key` (cleanup's per-namespace counts). */
export function sum(data: unknown, key: string): number {
  if (data && typeof data === 'object' && !Array.isArray(data)) {
    const value = (data as Record<string, unknown>)[key];
    if (value && typeof value === 'object' && !Array.isArray(value)) {
      return Object.values(value as Record<string, unknown>).reduce<number>(
        (total, n) => total + (typeof n === 'number' && Number.isFinite(n) ? n : 0),
        0,
      );
    }
  }
  return 0;
}

/** A map of counts at `key` as [name, count] pairs, largest first, zeros left out. */
export function entries(data: unknown, key: string): [string, number][] {
  if (data && typeof data === 'object' && !Array.isArray(data)) {
    const value = (data as Record<string, unknown>)[key];
    if (value && typeof value === 'object' && !Array.isArray(value)) {
      return Object.entries(value as Record<string, unknown>)
        .filter((pair): pair is [string, number] => typeof pair[1] === 'number' && pair[1] > 0)
        .sort((a, b) => b[1] - a[1]);
    }
  }
  return [];
}

/** Keys listed per namespace at `key` (cleanup's sample of orphan keys). */
export function keys(data: unknown, key: string): [string, string[]][] {
  if (data && typeof data === 'object' && !Array.isArray(data)) {
    const value = (data as Record<string, unknown>)[key];
    if (value && typeof value === 'object' && !Array.isArray(value)) {
      return Object.entries(value as Record<string, unknown>)
        .map(([name, items]): [string, string[]] => [name, Array.isArray(items) ? items.filter((k): k is string => typeof k === 'string') : []])
        .filter(([, items]) => items.length > 0);
    }
  }
  return [];
}
