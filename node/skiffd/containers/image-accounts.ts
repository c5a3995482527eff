// An image's /etc/passwd and /etc/group, which CreateContainer reads to resolve the user and its
// groups. Unpacked layers never change (they are named by digest and read only through overlays),
// so what a stack of layers holds is read once and kept: a node starts container after container
// from the same images, and on a slow node the two reads are the largest part of CreateContainer.
import { readImageFile } from './rootfs.ts';

export interface ImageAccounts {
  passwd: string;
  group: string;
}

/** Stacks of layers remembered; the least recently used goes first. */
const MAX_ENTRIES = 256;
/** Larger files are read every time rather than held. */
const MAX_CHARS = 256 * 1024;

export class ImageAccountsCache {
  readonly #byLayers = new Map<string, ImageAccounts>();

  /** What the image with these layers (base first) holds, if it was read before. */
  cached(layers: readonly string[]): ImageAccounts | undefined {
    const key = layers.join('\n');
    const hit = this.#byLayers.get(key);
    if (hit !== undefined) {
      this.#byLayers.delete(key);
      this.#byLayers.set(key, hit);
    }
    return hit;
  }

  /** Reads both files from `view` (the image's root: its only layer, or its merged overlay) and remembers them. */
  async read(layers: readonly string[], view: string): Promise<ImageAccounts> {
    const [passwd, group] = await Promise.all([readImageFile(view, 'etc/passwd'), readImageFile(view, 'etc/group')]);
    const accounts = { passwd, group };
    // An empty read may be a failure (a file descriptor shortage) rather than an absent file: not kept.
    if (passwd !== '' && group !== '' && passwd.length + group.length <= MAX_CHARS) {
      const key = layers.join('\n');
      this.#byLayers.delete(key);
      this.#byLayers.set(key, accounts);
      if (this.#byLayers.size > MAX_ENTRIES) this.#byLayers.delete(this.#byLayers.keys().next().value!);
    }
    return accounts;
  }
}
