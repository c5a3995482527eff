// How an OCI artifact is laid out as a volume, as CRI-O lays it out: each layer (a blob of any media
// type, tar or not) is one file in the volume's root, named by its `org.opencontainers.image.title`
// annotation (`oras push` sets it to the file's name). Names are checked here, once, so that nothing
// an artifact says can place a file outside the volume.
import type { Descriptor } from './manifest.ts';

export const TITLE_ANNOTATION = 'org.opencontainers.image.title';

export interface ArtifactFile {
  name: string;
  digest: string;
  size: number;
}

/** The files of the volume, or why the artifact cannot be laid out. */
export function artifactLayout(layers: readonly Descriptor[]): { files: ArtifactFile[] } | { problem: string } {
  if (layers.length === 0) return { problem: 'the artifact has no layers, so no files to mount' };
  const files: ArtifactFile[] = [];
  const seen = new Map<string, number>();
  for (const [i, layer] of layers.entries()) {
    const title = layer.annotations && typeof layer.annotations === 'object' ? layer.annotations[TITLE_ANNOTATION] : undefined;
    if (typeof title !== 'string' || title === '') {
      return { problem: `layer ${i} (${layer.digest}, ${layer.mediaType || 'no media type'}) has no ${TITLE_ANNOTATION} annotation to name its file` };
    }
    // One file name, never a path: no separator, no dot entries, nothing the kernel would refuse.
    if (title.includes('/') || title.includes('\0') || title === '.' || title === '..' || Buffer.byteLength(title) > 255) {
      return { problem: `layer ${i} (${layer.digest}) is titled ${JSON.stringify(title)}, which is not a plain file name` };
    }
    const other = seen.get(title);
    if (other !== undefined) return { problem: `layers ${other} and ${i} are both titled ${JSON.stringify(title)}` };
    seen.set(title, i);
    files.push({ name: title, digest: layer.digest, size: layer.size });
  }
  return { files };
}
