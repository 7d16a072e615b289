// The service worker: the app's shell (index.html and every file of the build, lazy pages
// included) is cached when it installs, so the app opens, reloads and goes to any page without
// the network. Navigations go to the network first (a new version shows at once) and fall back
// to the cached index.html; the build's files come from the cache. It never touches /api/ or
// /rest/: what belongs to a user (audio kept offline, the outbox) lives in the page's IndexedDB,
// which signing out clears. vite.config.ts builds this into dist/sw.js and fills in the list.
/// <reference lib="webworker" />
export {};
declare const self: ServiceWorkerGlobalScope;
/** The build's files (filled in at build time). */
declare const PRECACHE: string[];
/** A hash of them: a new build is a new cache. */
declare const VERSION: string;

const PREFIX = 'musiclib-shell-';
const SHELL = PREFIX + VERSION;
/** How long a navigation waits for the server before the cached page answers. */
const NAVIGATION_TIMEOUT = 5_000;

self.addEventListener('install', (event) => {
  event.waitUntil(
    caches.open(SHELL).then((cache) => cache.addAll(['/', ...PRECACHE].map((url) => new Request(url, { cache: 'reload' })))),
  );
});

self.addEventListener('activate', (event) => {
  event.waitUntil(
    (async () => {
      for (const key of await caches.keys()) if (key.startsWith(PREFIX) && key !== SHELL) await caches.delete(key);
      // Control the page that registered it, so it works offline from the first visit.
      await self.clients.claim();
    })(),
  );
});

self.addEventListener('fetch', (event) => {
  const request = event.request;
  if (request.method !== 'GET') return;
  const url = new URL(request.url);
  if (url.origin !== self.location.origin) return;
  // The API and the Subsonic interface: the network's, untouched (never cached here).
  if (url.pathname.startsWith('/api/') || url.pathname.startsWith('/rest/') || url.pathname === '/health') return;
  if (request.mode === 'navigate') event.respondWith(navigate(request));
  else event.respondWith(shellFile(request));
});

async function navigate(request: Request): Promise<Response> {
  const timeout = new AbortController();
  const timer = setTimeout(() => timeout.abort(), NAVIGATION_TIMEOUT);
  try {
    const response = await fetch(request, { signal: timeout.signal });
    if (response.status < 500) return response;
  } catch {
    // No network, or no answer in time: the cached page.
  } finally {
    clearTimeout(timer);
  }
  return (await caches.match('/', { cacheName: SHELL })) ?? Response.error();
}

async function shellFile(request: Request): Promise<Response> {
  return (await caches.match(request, { ignoreVary: true })) ?? fetch(request);
}
