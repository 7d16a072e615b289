// The "Add to playlist" dialog: which tracks it is adding (null when closed).
import type { QueueTrack } from '../player/queue';

class PickerStore {
  tracks = $state<QueueTrack[] | null>(null);
  open = (tracks: QueueTrack[]) => (this.tracks = tracks);
  close = () => (this.tracks = null);
}

export const picker = new PickerStore();
