// The "Share" dialog: what it shares (an album, a playlist or tracks) and its name; null when
// closed. The dialog itself is a lazy chunk, loaded the first time one is opened.
export type ShareTarget = { album_id: string } | { playlist_id: string } | { track_ids: string[] };

class SharingStore {
  request = $state<{ target: ShareTarget; title: string } | null>(null);
  open = (target: ShareTarget, title: string) => (this.request = { target, title });
  close = () => (this.request = null);
}

export const sharing = new SharingStore();
