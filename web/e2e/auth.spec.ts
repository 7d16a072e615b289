import { expect, test, PASSWORD, USER } from './fixtures';

test('sign in, stay signed in across a reload, sign out', async ({ page, problems }) => {
  void problems;
  await page.goto('/albums');
  await expect(page).toHaveURL(/\/login\?next=%2Falbums/);
  await page.getByLabel('User name').fill(USER);
  await page.getByLabel('Password').fill('wrong-password-123');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page.getByRole('alert')).toContainText('Wrong user name or password');

  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page.getByRole('heading', { name: 'Albums', level: 1 })).toBeVisible();
  await expect(page).toHaveURL(/\/albums$/);

  await page.reload();
  await expect(page.getByRole('heading', { name: 'Albums', level: 1 })).toBeVisible();

  await page.getByRole('button', { name: 'Sign out' }).click();
  await expect(page.getByRole('heading', { name: 'Sign in' })).toBeVisible();
  expect(await page.evaluate(() => localStorage.getItem('musiclib.auth'))).toBeNull();
});

test('registration form answers with the server’s decision', async ({ page, problems }) => {
  void problems;
  await page.goto('/login');
  await page.getByRole('button', { name: 'No account? Create one' }).click();
  await expect(page.getByRole('heading', { name: 'Create account' })).toBeVisible();
  const name = `listener-${Date.now()}`;
  await page.getByLabel('User name').fill(name);
  await page.getByLabel('Password').fill('listener-password-1');
  await page.getByRole('button', { name: 'Create account' }).click();
  // Open registration signs the new listener in; closed registration says so.
  await expect(
    page.getByRole('heading', { name: 'Home', level: 1 }).or(page.getByText('Registration is closed on this server.')),
  ).toBeVisible();
});
