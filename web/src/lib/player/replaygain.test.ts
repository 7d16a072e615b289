import { describe, expect, it } from 'vitest';
import { dbToLinear, gainFactor } from './replaygain';

const values = { track_gain: -6, track_peak: 0.5, album_gain: -9, album_peak: 0.8 };

describe('the ReplayGain factor', () => {
  it('is 10^(gain/20)', () => {
    expect(dbToLinear(0)).toBe(1);
    expect(dbToLinear(-20)).toBeCloseTo(0.1, 12);
    expect(gainFactor(values, 'track')).toBeCloseTo(0.501187, 6);
    expect(gainFactor(values, 'album')).toBeCloseTo(0.354813, 6);
  });

  it('is 1 when off or when the track has no gain', () => {
    expect(gainFactor(values, 'off')).toBe(1);
    expect(gainFactor(null, 'track')).toBe(1);
    expect(gainFactor(undefined, 'album')).toBe(1);
    expect(gainFactor({ track_gain: null, track_peak: 0.9 }, 'track')).toBe(1);
    expect(gainFactor({ track_gain: Number.NaN }, 'track')).toBe(1);
  });

  it('falls back to the track gain and peak in album mode', () => {
    const single = { track_gain: -4, track_peak: 0.9, album_gain: null, album_peak: null };
    expect(gainFactor(single, 'album')).toBeCloseTo(dbToLinear(-4), 12);
  });

  it('never pushes the peak past full scale', () => {
    // -1 dB would leave a peak of 1.5 at 1.34: capped at 1/1.5.
    expect(gainFactor({ track_gain: -1, track_peak: 1.5 }, 'track')).toBeCloseTo(1 / 1.5, 12);
    // The album's peak caps the album's gain, not the track's.
    expect(gainFactor({ track_gain: -10, track_peak: 0.2, album_gain: -1, album_peak: 1.25 }, 'album')).toBeCloseTo(0.8, 12);
    for (const gain of [-20, -6, -0.5, 0, 3, 12]) {
      for (const peak of [0.1, 0.5, 0.99, 1, 1.2, 4]) {
        const factor = gainFactor({ track_gain: gain, track_peak: peak }, 'track');
        expect(factor * peak).toBeLessThanOrEqual(1 + 1e-12);
        expect(factor).toBeLessThanOrEqual(1);
        expect(factor).toBeGreaterThan(0);
      }
    }
  });

  it('never turns a track up: the audio element cannot', () => {
    expect(gainFactor({ track_gain: 6, track_peak: 0.25 }, 'track')).toBe(1);
    expect(gainFactor({ track_gain: 2 }, 'track')).toBe(1);
  });

  it('ignores a peak of zero (silence) rather than dividing by it', () => {
    expect(gainFactor({ track_gain: -3, track_peak: 0 }, 'track')).toBeCloseTo(dbToLinear(-3), 12);
  });
});
