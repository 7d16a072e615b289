import { t } from './messages';

/** The document title of a page: "Page · musiclib". */
export function setTitle(...parts: (string | null | undefined)[]): void {
  document.title = [...parts.filter(Boolean), t.appName].join(' · ');
}
