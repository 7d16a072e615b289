// The browser's media session: what the lock screen and media keys show and do.
import type { QueueTrack } from './queue';
import { coverUrl, COVER_SIZES, withToken } from '../api/media';

export interface SessionActions {
  play(): void;
  pause(): void;
  next(): void;
  previous(): void;
  seek(seconds: number): void;
  seekBy(seconds: number): void;
}

const supported = () => typeof navigator !== 'undefined' && 'mediaSession' in navigator;

export function bindActions(actions: SessionActions): void {
  if (!supported()) return;
  const set = (action: MediaSessionAction, handler: MediaSessionActionHandler) => {
    try {
      navigator.mediaSession.setActionHandler(action, handler);
    } catch {
      // An action this browser does not know.
    }
  };
  set('play', () => actions.play());
  set('pause', () => actions.pause());
  set('stop', () => actions.pause());
  set('nexttrack', () => actions.next());
  set('previoustrack', () => actions.previous());
  set('seekto', (d) => d.seekTime != null && actions.seek(d.seekTime));
  set('seekforward', (d) => actions.seekBy(d.seekOffset ?? 10));
  set('seekbackward', (d) => actions.seekBy(-(d.seekOffset ?? 10)));
}

export function showTrack(track: QueueTrack | null): void {
  if (!supported()) return;
  if (!track) {
    navigator.mediaSession.metadata = null;
    return;
  }
  const image = track.media?.kind === 'episode' ? track.media.cover_url : null;
  const artwork = image
    ? [{ src: withToken(image) }]
    : track.has_cover && !track.media
    ? COVER_SIZES.map((size) => ({ src: coverUrl('tracks', track.id, size), sizes: `${size}x${size}` }))
    : [];
  navigator.mediaSession.metadata = new MediaMetadata({
    title: track.title,
    artist: track.artist ?? '',
    album: track.album ?? '',
    artwork,
  });
}

export function showState(playing: boolean, position: number, duration: number): void {
  if (!supported()) return;
  navigator.mediaSession.playbackState = playing ? 'playing' : 'paused';
  if (Number.isFinite(duration) && duration > 0 && position <= duration) {
    try {
      navigator.mediaSession.setPositionState({ duration, position, playbackRate: 1 });
    } catch {
      // Inconsistent values during a track change: the next update sets them.
    }
  }
}
