// History-API routing: one table of the app's routes (the server answers index.html for
// exactly these), each page a lazy import so the first load is the shell and one page.
import { parse } from 'regexparam';
import type { Component } from 'svelte';

type Loader = () => Promise<{ default: Component<any> }>;

interface Route {
  pattern: RegExp;
  keys: string[];
  load: Loader;
  /** Reachable without signing in. */
  open?: boolean;
}

const table: [string, Loader, boolean?][] = [
  ['/', () => import('../../pages/Home.svelte')],
  ['/login', () => import('../../pages/Login.svelte'), true],
  ['/albums', () => import('../../pages/Albums.svelte')],
  ['/albums/:id', () => import('../../pages/Album.svelte')],
  ['/artists', () => import('../../pages/Artists.svelte')],
  ['/artists/:id', () => import('../../pages/Artist.svelte')],
  ['/genres', () => import('../../pages/Genres.svelte')],
  // The library as its folders: `/folders/<library>/<each part of the path, URI-encoded>`.
  ['/folders', () => import('../../pages/Folders.svelte')],
  ['/folders/*', () => import('../../pages/Folders.svelte')],
  ['/tracks', () => import('../../pages/Tracks.svelte')],
  ['/tracks/:id', () => import('../../pages/Track.svelte')],
  ['/search', () => import('../../pages/Search.svelte')],
  ['/liked', () => import('../../pages/Liked.svelte')],
  ['/history', () => import('../../pages/History.svelte')],
  ['/playlists', () => import('../../pages/Playlists.svelte')],
  ['/playlists/smart', () => import('../../pages/SmartEditor.svelte')],
  ['/playlists/:id', () => import('../../pages/Playlist.svelte')],
  ['/playlists/:id/rules', () => import('../../pages/SmartEditor.svelte')],
  ['/shares', () => import('../../pages/Shares.svelte')],
  // A share's public page: no account, and never the listener's token.
  ['/s/:id', () => import('../../pages/Share.svelte'), true],
  ['/now-playing', () => import('../../pages/NowPlaying.svelte')],
  ['/radio', () => import('../../pages/Radio.svelte')],
  ['/podcasts', () => import('../../pages/Podcasts.svelte')],
  ['/podcasts/:id', () => import('../../pages/Podcast.svelte')],
  ['/stations', () => import('../../pages/Stations.svelte')],
  ['/settings', () => import('../../pages/Settings.svelte')],
  ['/admin', () => import('../../pages/admin/Admin.svelte')],
  ['/admin/:section', () => import('../../pages/admin/Admin.svelte')],
  ['/upload', () => import('../../pages/Upload.svelte')],
  ['/offline', () => import('../../pages/Offline.svelte')],
];

const routes: Route[] = table.map(([path, load, open]) => ({ ...parse(path), load, open }));
const notFound: Loader = () => import('../../pages/NotFound.svelte');

export interface Match {
  load: Loader;
  params: Record<string, string>;
  open: boolean;
}

export function match(pathname: string): Match {
  for (const route of routes) {
    const found = route.pattern.exec(pathname);
    if (found) {
      const params: Record<string, string> = {};
      try {
        route.keys.forEach((key, i) => (params[key] = decodeURIComponent(found[i + 1] ?? '')));
      } catch {
        break; // A malformed %-escape (a mistyped link): no page of ours.
      }
      return { load: route.load, params, open: !!route.open };
    }
  }
  return { load: notFound, params: {}, open: true };
}

class RouterStore {
  path = $state(location.pathname);
  search = $state(location.search);

  constructor() {
    addEventListener('popstate', () => this.#update());
  }

  #update() {
    this.path = location.pathname;
    this.search = location.search;
  }

  go = (url: string, replace = false) => {
    const target = new URL(url, location.href);
    if (target.pathname + target.search === location.pathname + location.search) return;
    if (replace) history.replaceState(null, '', target);
    else history.pushState(null, '', target);
    this.#update();
    if (!replace) scrollTo(0, 0);
  };

  /** The query parameter `name` of the current URL. */
  param = (name: string): string => new URLSearchParams(this.search).get(name) ?? '';
}

export const router = new RouterStore();

/** One delegated handler: same-origin <a href> clicks navigate without a reload. */
export function interceptLinks(root: HTMLElement): void {
  root.addEventListener('click', (event) => {
    if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    const anchor = (event.target as Element).closest('a');
    if (!anchor || anchor.target || anchor.hasAttribute('download')) return;
    const url = new URL(anchor.href, location.href);
    if (url.origin !== location.origin || url.pathname.startsWith('/api/')) return;
    event.preventDefault();
    router.go(url.pathname + url.search);
  });
}
