// ReplayGain in the player: how much a track's volume is scaled by, from the gains the server
// reads from its tags or measures (TrackOut.replay_gain) and the user's mode (settings).
//
// The audio elements can only turn a track down (`volume` is at most 1): a negative gain
// (most music, mastered louder than ReplayGain's -18 LUFS) applies as it is; a positive one
// plays at full volume. The factor never exceeds 1/peak, so the loudest sample of a track
// (or of its album, in album mode) is never pushed past full scale.

export type ReplayGainMode = 'off' | 'track' | 'album';

export interface ReplayGainValues {
  track_gain?: number | null;
  track_peak?: number | null;
  album_gain?: number | null;
  album_peak?: number | null;
}

/** A gain in dB as a linear factor. */
export function dbToLinear(gain: number): number {
  return Math.pow(10, gain / 20);
}

/**
 * The factor a track's volume is scaled by: 10^(gain/20) of the track's gain, or in album
 * mode of the album's (the track's where the album has none), at most 1/peak of the same
 * kind, and at most 1. 1 when the mode is off or the track has no gain.
 */
export function gainFactor(values: ReplayGainValues | null | undefined, mode: ReplayGainMode): number {
  if (mode === 'off' || !values) return 1;
  const album = mode === 'album' && isNumber(values.album_gain);
  const gain = album ? values.album_gain : values.track_gain;
  const peak = album ? values.album_peak : values.track_peak;
  if (!isNumber(gain)) return 1;
  let factor = dbToLinear(gain);
  if (isNumber(peak) && peak > 0) factor = Math.min(factor, 1 / peak);
  return Math.min(factor, 1);
}

function isNumber(value: number | null | undefined): value is number {
  return typeof value === 'number' && Number.isFinite(value);
}
