// The one API client: typed by the schema generated from the server's OpenAPI document.
import createClient, { type Middleware } from 'openapi-fetch';
import type { components, paths } from './schema';
import { auth } from '../stores/auth.svelte';

export type Schemas = components['schemas'];
export type Track = Schemas['TrackOut'];
export type Album = Schemas['AlbumOut'];
export type Artist = Schemas['ArtistOut'];
export type Playlist = Schemas['PlaylistOut'];

const authorize: Middleware = {
  onRequest({ request }) {
    if (auth.token) request.headers.set('Authorization', `Bearer ${auth.token}`);
    return request;
  },
  onResponse({ response, request }) {
    // An expired or revoked token: back to the sign-in page (not for the sign-in call itself).
    if (response.status === 401 && !new URL(request.url).pathname.startsWith('/api/v1/auth/')) {
      auth.expire();
    }
    return response;
  },
};

// Array parameters are comma-separated (`style: form, explode: false` in the document).
export const api = createClient<paths>({
  baseUrl: '/api/v1',
  querySerializer: { array: { style: 'form', explode: false } },
});
api.use(authorize);

/** The server's error message, for a toast or a form. */
export function errorMessage(error: unknown, fallback: string): string {
  if (error && typeof error === 'object' && 'error' in error) {
    const detail = (error as { error?: { message?: unknown } }).error;
    if (detail && typeof detail.message === 'string') return detail.message;
  }
  return fallback;
}

/** The answer's data, or a throw (for pages that show a failure with Retry). */
export async function must<T>(request: Promise<{ data?: T; error?: unknown }>): Promise<T> {
  const { data, error } = await request;
  if (data === undefined) throw error ?? new Error('no data');
  return data;
}
