// Stream and cover URLs: <audio> and <img> cannot send headers, so these carry ?token=.
import { auth } from '../stores/auth.svelte';

/** Thumbnail edges asked of the server (it caches each size it is asked for, so keep few). */
export const COVER_SIZES = [96, 256, 512] as const;
export type CoverSize = (typeof COVER_SIZES)[number];

export type Quality = 'original' | 'high' | 'medium' | 'low';

export function streamUrl(trackId: string, quality?: Quality): string {
  const params = new URLSearchParams();
  if (quality) params.set('quality', quality);
  params.set('token', auth.token ?? '');
  return `/api/v1/stream/${encodeURIComponent(trackId)}?${params}`;
}

export function coverUrl(kind: 'albums' | 'tracks', id: string, size: CoverSize): string {
  const params = new URLSearchParams({ size: String(size), token: auth.token ?? '' });
  return `/api/v1/${kind}/${encodeURIComponent(id)}/cover?${params}`;
}

/** A playlist's own cover (uploaded by its owner). */
export function playlistCoverUrl(id: string): string {
  return `/api/v1/playlists/${encodeURIComponent(id)}/cover?${new URLSearchParams({ token: auth.token ?? '' })}`;
}

/** `srcset` of a cover shown `shown` CSS pixels wide: the listed size and its double. */
export function coverSrcset(kind: 'albums' | 'tracks', id: string): string {
  return COVER_SIZES.map((size) => `${coverUrl(kind, id, size)} ${size}w`).join(', ');
}

/** A media URL the server gave (a podcast's `cover_url`, an episode's `stream_url`), with `?token=`. */
export function withToken(url: string, extra: Record<string, string> = {}): string {
  const target = new URL(url, location.origin);
  for (const [key, value] of Object.entries(extra)) target.searchParams.set(key, value);
  target.searchParams.set('token', auth.token ?? '');
  return target.origin === location.origin ? target.pathname + target.search : target.href;
}
