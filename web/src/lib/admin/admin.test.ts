import { describe, expect, it } from 'vitest';
import { arcs, percent, shares } from './chart';
import { bytes, hours } from './format';
import { count, entries, finished, fraction, keys, sum, summary } from './jobs';

describe('job progress', () => {
  it('reads a scan as files handled of files seen', () => {
    const job = { kind: 'scan_local_folder', state: 'running', progress: { seen: 40, imported: 10, skipped: 8, failed: 2, done: false } };
    expect(fraction(job)).toBe(0.5);
    expect(summary(job)).toBe('40 seen · 10 imported · 8 skipped · 2 failed');
  });

  it('is indeterminate before anything is counted, and full once finished', () => {
    expect(fraction({ kind: 'scan_local_folder', state: 'queued', progress: null })).toBeNull();
    expect(fraction({ kind: 'enrich_task', state: 'running', progress: { anything: 3 } })).toBeNull();
    expect(fraction({ kind: 'scan_local_folder', state: 'failed', progress: { seen: 9, imported: 1 } })).toBe(1);
    expect(finished('succeeded') && finished('failed') && !finished('running') && !finished('queued')).toBe(true);
  });

  it('prefers the result to the progress, and reads reindex and file checks', () => {
    const job = { kind: 'check_files', state: 'running', progress: { total: 10, checked: 2, broken: 0 }, result: null };
    expect(fraction(job)).toBe(0.2);
    const done = { kind: 'reindex_library', state: 'succeeded', progress: { total: 4, done: 1 }, result: { total: 4, done: 4, changed: 1, failed: 0 } };
    expect(summary(done)).toBe('4 of 4 read · 1 changed · 0 failed');
  });

  it('never trusts the shape: wrong types and missing keys count as nothing', () => {
    expect(count({ seen: '12' }, 'seen')).toBe(0);
    expect(count(null, 'seen')).toBe(0);
    expect(count([1, 2], 'length')).toBe(0);
    expect(fraction({ kind: 'scan_local_folder', state: 'running', progress: 'nonsense' })).toBeNull();
    expect(summary({ kind: 'enrich_task', state: 'running', progress: { tracks_done: 3, note: 'x' } })).toBe('tracks done 3');
  });

  it('adds up and lists a cleanup report per namespace', () => {
    const report = { orphans: { audio: 2, covers: 0, renditions: 5 }, orphan_keys: { audio: ['a/1', 'a/2', 7], covers: [] } };
    expect(sum(report, 'orphans')).toBe(7);
    expect(entries(report, 'orphans')).toEqual([
      ['renditions', 5],
      ['audio', 2],
    ]);
    expect(keys(report, 'orphan_keys')).toEqual([['audio', ['a/1', 'a/2']]]);
  });
});

describe('charts', () => {
  it('lays a donut’s arcs end to end around the circle', () => {
    const drawn = arcs(
      [
        { label: 'a', value: 3 },
        { label: 'b', value: 1 },
        { label: 'c', value: -5 },
      ],
      100,
    );
    expect(drawn.map((arc) => [arc.length, arc.offset])).toEqual([
      [75, -0],
      [25, -75],
      [0, -100],
    ]);
    expect(arcs([{ label: 'a', value: 0 }], 100)).toEqual([]);
  });

  it('scales bars to the largest value', () => {
    expect(shares([5, 10, 0, Number.NaN])).toEqual([0.5, 1, 0, 0]);
    expect(shares([])).toEqual([]);
  });

  it('rounds shares to percentages without hiding a small one', () => {
    expect(percent(0.001)).toBe(1);
    expect(percent(0.999)).toBe(99);
    expect(percent(1)).toBe(100);
    expect(percent(0)).toBe(0);
  });
});

describe('formatting', () => {
  it('writes sizes in decimal units', () => {
    expect(bytes(0)).toBe('0 B');
    expect(bytes(1500)).toBe('1.5 KB');
    expect(bytes(170_000_000)).toBe('170 MB');
    expect(bytes(null)).toBe('–');
  });

  it('writes playtime in hours and minutes', () => {
    expect(hours(59)).toBe('1 min');
    expect(hours(3600 * 12 + 5 * 60)).toBe('12 h 05 min');
  });
});
