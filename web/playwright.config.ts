import { defineConfig } from '@playwright/test';

// End-to-end tests against a running server (MUSICLIB_URL) that serves the UI and the API, with
// the test corpus imported and an admin account (MUSICLIB_USER, MUSICLIB_PASSWORD).
// scripts/dev-server.sh starts one; until the binary serves web/dist, `vite preview` does
// (it proxies /api to the server and sends the server's CSP).
const baseURL = process.env.MUSICLIB_URL ?? 'http://127.0.0.1:18130';
const executablePath = process.env.CHROMIUM ?? '/usr/bin/chromium';

export default defineConfig({
  testDir: 'e2e',
  outputDir: 'test-results/output',
  workers: 1,
  retries: 0,
  fullyParallel: false,
  timeout: 90_000,
  expect: { timeout: 15_000 },
  reporter: [['list'], ['html', { open: 'never', outputFolder: 'playwright-report' }]],
  use: {
    baseURL,
    trace: 'retain-on-failure',
    actionTimeout: 15_000,
    navigationTimeout: 30_000,
    launchOptions: { executablePath, args: ['--autoplay-policy=no-user-gesture-required'] },
  },
  projects: [
    { name: 'desktop', use: { viewport: { width: 1280, height: 800 } }, testIgnore: /phone\.spec/ },
    {
      name: 'phone',
      use: { viewport: { width: 375, height: 812 }, isMobile: true, hasTouch: true },
      testMatch: /(phone|layout)\.spec/,
    },
  ],
});
