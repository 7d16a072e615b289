// A share's public page calls the API with no account: its own client, with no middleware, so
// the listener's token (if one is stored) is never sent and a 401 never signs anyone out. The
// share's id is the credential; its stream, cover, lyrics and download URLs carry nothing else.
import createClient from 'openapi-fetch';
import type { components, paths } from './schema';

export type Shared = components['schemas']['SharedOut'];
export type SharedTrack = components['schemas']['SharedTrackOut'];

export const publicApi = createClient<paths>({ baseUrl: '/api/v1' });

const base = (share: string) => `/api/v1/shared/${encodeURIComponent(share)}`;
const track = (share: string, id: string) => `${base(share)}/tracks/${encodeURIComponent(id)}`;

export const sharedCoverUrl = (share: string, size: number) => `${base(share)}/cover?size=${size}`;
export const sharedTrackCoverUrl = (share: string, id: string, size: number) => `${track(share, id)}/cover?size=${size}`;
export const sharedStreamUrl = (share: string, id: string) => `${track(share, id)}/stream`;
export const sharedDownloadUrl = (share: string, id: string) => `${track(share, id)}/download`;
