import AxeBuilder from '@axe-core/playwright';
import { expect, test } from './fixtures';

// The admin area on a phone (375 × 812): reached from More, every section without sideways
// scrolling and without a serious or critical axe violation.

test('admin on a phone: from More, each section fits and passes axe', async ({ signedIn: page }) => {
  test.setTimeout(180_000);
  await page.goto('/');
  await expect(page.getByRole('heading', { name: 'Home', level: 1 })).toBeVisible();
  const nav = page.getByRole('navigation', { name: 'Main' });
  await nav.getByRole('button', { name: 'More', exact: true }).click();
  await nav.getByRole('link', { name: 'Admin' }).click();
  await expect(page.getByRole('heading', { name: 'Users', level: 1 })).toBeVisible();

  const sections = page.getByRole('navigation', { name: 'Admin sections' });
  for (const name of ['Users', 'Library scan', 'Jobs', 'Storage', 'Duplicates', 'Broken files', 'Missing metadata', 'Services']) {
    await sections.getByRole('link', { name }).click();
    await expect(page.getByRole('heading', { name, level: 1 })).toBeVisible();
    // The current tab is scrolled into view in the sideways-scrolling tab bar.
    await expect(sections.getByRole('link', { name })).toBeInViewport();
    await expect(page.getByText('Loading…')).toHaveCount(0);
    const overflow = await page.evaluate(() => {
      const main = document.querySelector('main');
      return {
        page: document.documentElement.scrollWidth - document.documentElement.clientWidth,
        main: main ? main.scrollWidth - main.clientWidth : 0,
      };
    });
    expect(overflow, `sideways scrolling on ${name}`).toEqual({ page: 0, main: 0 });
    const results = await new AxeBuilder({ page }).analyze();
    const bad = results.violations
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(' ')).slice(0, 3).join(', ')}`);
    expect(bad, `axe on ${name}`).toEqual([]);
    await page.screenshot({ path: `test-results/phone-admin-${name.toLowerCase().replaceAll(' ', '-')}.png` });
  }
});
