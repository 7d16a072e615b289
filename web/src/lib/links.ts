// Links that came from a feed or a user (a podcast's site, a station's home page): shown as a
// link only when they are http or https, so no `javascript:` or other scheme is ever clickable.
export function webLink(url: string | null | undefined): string | null {
  if (!url) return null;
  try {
    const parsed = new URL(url);
    return parsed.protocol === 'http:' || parsed.protocol === 'https:' ? parsed.href : null;
  } catch {
    return null;
  }
}
