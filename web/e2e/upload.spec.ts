import { expect, test, wav } from './fixtures';

test('upload: chosen or dropped files, each with its progress and outcome', async ({ signedIn: page, api }) => {
  const started = new Date(Date.now() - 5_000).toISOString();
  const audio = wav();
  const name = `upload-${Date.now()}.wav`;
  await page.goto('/upload');
  await page.getByLabel('Choose files').setInputFiles([{ name, mimeType: 'audio/wav', buffer: audio }]);
  const uploads = page.getByRole('list', { name: 'Uploads' });
  const first = uploads.getByRole('listitem').filter({ hasText: name });
  await expect(first.getByRole('status')).toHaveText('Added to the library');
  await expect(first.getByRole('progressbar')).toHaveAttribute('value', '1');

  // The same bytes again, dropped onto the page; and a file that is not audio.
  await page.evaluate(
    ([bytes, fileName]) => {
      const transfer = new DataTransfer();
      transfer.items.add(new File([new Uint8Array(bytes)], `again-${fileName}`, { type: 'audio/wav' }));
      transfer.items.add(new File(['not audio at all'], 'notes.txt', { type: 'text/plain' }));
      document.body.dispatchEvent(new DragEvent('dragover', { dataTransfer: transfer, bubbles: true, cancelable: true }));
      document.body.dispatchEvent(new DragEvent('drop', { dataTransfer: transfer, bubbles: true, cancelable: true }));
    },
    [[...audio], name] as const,
  );
  await expect(uploads.getByRole('listitem').filter({ hasText: `again-${name}` }).getByRole('status')).toHaveText('Already in the library');
  await expect(uploads.getByRole('listitem').filter({ hasText: 'notes.txt' }).getByRole('status')).toContainText('Refused:');

  // Tidy up: the track this test uploaded goes (uploads list newest first).
  const found = await api.get<{ items: { id: string; created_at: string }[] }>('/tracks?source=upload&limit=20');
  for (const track of found.items.filter((t) => t.created_at >= started)) await api.send('DELETE', `/tracks/${track.id}`);
});
