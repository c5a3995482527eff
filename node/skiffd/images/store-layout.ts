// Where everything of the image store lives under the daemon root.
import { join } from 'node:path';

export class StoreLayout {
  readonly dir: string;
  constructor(root: string) {
    this.dir = join(root, 'images');
  }
  /** Content-addressed blobs: manifests, indexes, configs, compressed layers. */
  get blobsDir(): string {
    return join(this.dir, 'blobs', 'sha256');
  }
  blob(digest: string): string {
    return join(this.blobsDir, hex(digest));
  }
  /** One directory per unpacked layer, named by its diff id; `fs/` is the overlayfs lowerdir. */
  get layersDir(): string {
    return join(this.dir, 'layers');
  }
  layer(diffId: string): string {
    return join(this.layersDir, hex(diffId));
  }
  layerFs(diffId: string): string {
    return join(this.layer(diffId), 'fs');
  }
  /** One JSON record per image, named by the image id (config digest). */
  get recordsDir(): string {
    return join(this.dir, 'records');
  }
  record(id: string): string {
    return join(this.recordsDir, `${hex(id)}.json`);
  }
  /** Removed layers and blobs being deleted in the background; emptied at startup. */
  get trashDir(): string {
    return join(this.dir, 'trash');
  }
  /** Downloads and unpacks in progress; emptied at startup. */
  get tmpDir(): string {
    return join(this.dir, 'tmp');
  }
}

export function hex(digest: string): string {
  return digest.startsWith('sha256:') ? digest.slice(7) : digest;
}
