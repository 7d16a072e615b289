import { defineConfig } from 'vite';
import { svelte } from '@sveltejs/vite-plugin-svelte';
import { serviceWorker } from './sw/plugin.ts';

// The server's Content-Security-Policy for the UI; the dev and preview servers send it too, so
// a violation shows up while developing and in the e2e tests, not first in production.
export const CSP =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; " +
  "media-src 'self' blob:; connect-src 'self'; worker-src 'self'; manifest-src 'self'; " +
  "font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

// Until the binary serves dist/ itself, `vite preview` does, with /api sent to a running server.
const api = process.env.MUSICLIB_API ?? 'http://127.0.0.1:18123';
const proxy = { '/api': { target: api, changeOrigin: false } };

export default defineConfig({
  plugins: [svelte(), serviceWorker()],
  build: {
    // No data: URIs and no inlined assets: everything is a file under /assets/.
    assetsInlineLimit: 0,
    manifest: true,
    target: 'es2022',
  },
  server: { proxy, headers: { 'Content-Security-Policy': CSP } },
  preview: { proxy, headers: { 'Content-Security-Policy': CSP } },
  test: {
    include: ['src/**/*.test.ts'],
    environment: 'node',
  },
});
