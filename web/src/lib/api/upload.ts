// Uploads with progress. fetch() reports no upload progress, so this one call uses
// XMLHttpRequest; everything else goes through the typed client.
import type { Track } from './client';
import { auth } from '../stores/auth.svelte';

export type UploadOutcome =
  | { kind: 'added'; track: Track }
  | { kind: 'existing'; track: Track }
  | { kind: 'refused'; reason: string }
  | { kind: 'failed' };

function isTrack(value: unknown): value is Track {
  return !!value && typeof value === 'object' && 'id' in value && 'title' in value;
}

function reasonOf(value: unknown, status: number): string {
  if (value && typeof value === 'object' && 'error' in value) {
    const detail = (value as { error?: { message?: unknown } }).error;
    if (detail && typeof detail.message === 'string') return detail.message;
  }
  return `HTTP ${status}`;
}

/** POST /tracks/upload (multipart field `file`), calling `progress` with 0–1 as bytes go. */
export function upload(file: File, progress: (fraction: number) => void): Promise<UploadOutcome> {
  return new Promise((resolve) => {
    const request = new XMLHttpRequest();
    request.open('POST', '/api/v1/tracks/upload');
    if (auth.token) request.setRequestHeader('Authorization', `Bearer ${auth.token}`);
    request.responseType = 'json';
    request.upload.onprogress = (event) => event.lengthComputable && progress(event.loaded / event.total);
    request.onload = () => {
      const body: unknown = request.response;
      if (request.status === 401) auth.expire();
      if ((request.status === 200 || request.status === 201) && isTrack(body)) {
        resolve({ kind: request.status === 201 ? 'added' : 'existing', track: body });
      } else {
        resolve({ kind: 'refused', reason: reasonOf(body, request.status) });
      }
    };
    request.onerror = () => resolve({ kind: 'failed' });
    const form = new FormData();
    form.append('file', file, file.name);
    request.send(form);
  });
}
