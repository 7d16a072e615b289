// The folder view's URLs: `/folders` is the top (the libraries), `/folders/<library>` a
// library's root and `/folders/<library>/<part>/<part>…` a folder in it, each part of the
// folder's path URI-encoded on its own, so a name with `#`, `?`, `%`, spaces or any Unicode
// stays one part. The router decodes the rest of the URL as one string: as no name holds a
// `/`, that is the library and the path exactly as the API lists them.
import { t } from './messages';

/** Where a folder is: `library` null for the top; `path` `""` for a library's root. */
export interface FolderPlace {
  library: string | null;
  path: string;
}

/** A step of the breadcrumb: a name and the link to it. */
export interface Crumb {
  name: string;
  href: string;
}

const encodePath = (path: string) =>
  path
    .split('/')
    .filter((part) => part !== '')
    .map(encodeURIComponent)
    .join('/');

/** The page of a folder. */
export function folderHref(library: string | null | undefined, path = ''): string {
  if (!library) return '/folders';
  const parts = encodePath(path);
  return `/folders/${encodeURIComponent(library)}${parts ? `/${parts}` : ''}`;
}

/** The folder a page shows, from the decoded rest of its URL (after `/folders/`). */
export function folderPlace(rest: string | undefined): FolderPlace {
  const parts = (rest ?? '').split('/').filter((part) => part !== '');
  const [library, ...path] = parts;
  return { library: library ?? null, path: path.join('/') };
}

/** The way down to a folder: Folders › the library › each folder on the path. */
export function crumbs(library: string | null | undefined, path: string): Crumb[] {
  const way: Crumb[] = [{ name: t.folders, href: '/folders' }];
  if (!library) return way;
  way.push({ name: t.folderLibrary(library), href: folderHref(library) });
  const parts = path.split('/').filter((part) => part !== '');
  parts.forEach((name, i) => way.push({ name, href: folderHref(library, parts.slice(0, i + 1).join('/')) }));
  return way;
}

/** The tracks in random order (Fisher–Yates). */
export function shuffled<T>(items: readonly T[], random: () => number = Math.random): T[] {
  const copy = [...items];
  for (let i = copy.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [copy[i], copy[j]] = [copy[j]!, copy[i]!];
  }
  return copy;
}
