import { expect, screenshot, test } from './fixtures';

test('home page draws', async ({ signedIn: page }) => {
  await page.goto('/');
  await expect(page.getByRole('heading', { name: 'Recently added' })).toBeVisible();
  await expect(page.getByRole('list', { name: 'Recently added' }).getByRole('listitem').first()).toBeVisible();
  await screenshot(page, 'smoke-home');
});
