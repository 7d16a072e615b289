import { mount } from 'svelte';
import './styles/tokens.css';
import './styles/base.css';
import App from './App.svelte';
import { applyTheme, savedTheme } from './lib/stores/theme';

applyTheme(savedTheme());
mount(App, { target: document.getElementById('app')! });

// The service worker keeps the app's files, so it opens without the network (built app only).
// Registered once the page has loaded: its downloads do not compete with the first page's.
// Not for a visitor of a share's page (`/s/…`): they have no account, and the whole app
// (about 260 KB) would download for nothing.
const visitor = location.pathname.startsWith('/s/');
if (import.meta.env.PROD && 'serviceWorker' in navigator && !visitor) {
  const register = () => void navigator.serviceWorker.register('/sw.js').catch(() => undefined);
  if (document.readyState === 'complete') register();
  else addEventListener('load', register, { once: true });
}
