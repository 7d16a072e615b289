// The one API client: typed by the schema generated from the server's OpenAPI document.
import createClient, { type Middleware } from 'openapi-fetch';
import type { components, paths } from './schema';
import { auth } from '../stores/auth.svelte';
import { t } from '../messages';

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

// No answer at all (offline, the server down, a timeout): an error answer like the server's,
// so pages show that they need the network instead of waiting on a promise that threw.
// A caller's own abort still throws.
const unreachable: Middleware = {
  onError({ error }) {
    if (error instanceof DOMException && error.name === 'AbortError') return;
    const body = { error: { code: 'unreachable', message: t.unreachable } };
    return new Response(JSON.stringify(body), { status: 503, headers: { 'Content-Type': 'application/json' } });
  },
};

// Array parameters are comma-separated (`style: form, explode: false` in the document).
export const api = createClient<paths>({
  baseUrl: '/api/v1',
  querySerializer: { array: { style: 'form', explode: false } },
});
api.use(authorize, unreachable);

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
