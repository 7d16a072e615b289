// The colour theme: light, dark or the system's (prefers-color-scheme), kept in localStorage
// and applied as html[data-theme]; tokens.css does the rest with CSS variables.
export type Theme = 'system' | 'light' | 'dark';
const KEY = 'musiclib.theme';

export function savedTheme(): Theme {
  const value = localStorage.getItem(KEY);
  return value === 'light' || value === 'dark' ? value : 'system';
}

export function applyTheme(theme: Theme): void {
  localStorage.setItem(KEY, theme);
  if (theme === 'system') delete document.documentElement.dataset.theme;
  else document.documentElement.dataset.theme = theme;
}
