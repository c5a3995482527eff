// How an OCI artifact is laid out as a volume, as CRI-O lays it out: each layer (a blob of any media
// type, tar or not) is one file in the volume's root, named by its `org.opencontainers.image.title`
// annotation (`oras push` sets it to the file's name), else by ModelPack's `org.cncf.model.filepath`
// (model packagers set both); a layer with neither is left out. Names are checked here, once, so that
// nothing an artifact says can place a file outside the volume.
import type { Descriptor } from './manifest.ts';

export const TITLE_ANNOTATION = 'org.opencontainers.image.title';
export const MODELPACK_FILEPATH_ANNOTATION = 'org.cncf.model.filepath';

export interface ArtifactFile {
  name: string;
  digest: string;
  size: number;
}

function layerName(layer: Descriptor): string | undefined {
  const a = layer.annotations && typeof layer.annotations === 'object' ? layer.annotations : {};
  for (const key of [TITLE_ANNOTATION, MODELPACK_FILEPATH_ANNOTATION]) {
    const v = a[key];
    if (typeof v === 'string' && v !== '') return v;
  }
  return undefined;
}

/**
 * The files of the volume and the layers left out for want of a name (each described for the log), or
 * why the artifact cannot be laid out.
 */
export function artifactLayout(layers: readonly Descriptor[]): { files: ArtifactFile[]; unnamed: string[] } | { problem: string } {
  if (layers.length === 0) return { problem: 'the artifact has no layers, so no files to mount' };
  const files: ArtifactFile[] = [];
  const unnamed: string[] = [];
  const seen = new Map<string, number>();
  for (const [i, layer] of layers.entries()) {
    const title = layerName(layer);
    if (title === undefined) {
      unnamed.push(`layer ${i} (${layer.digest}, ${layer.mediaType || 'no media type'})`);
      continue;
    }
    // One file name, never a path: no separator, no dot entries, nothing the kernel would refuse.
    // Not well-formed UTF-16 (a lone surrogate): two such names differ here and are one on disk.
    if (
      Buffer.from(title).toString() !== title ||
      title.includes('/') ||
      title.includes('\0') ||
      title === '.' ||
      title === '..' ||
      Buffer.byteLength(title) > 255
    ) {
      return { problem: `layer ${i} (${layer.digest}) is titled ${JSON.stringify(title)}, which is not a plain file name` };
    }
    const other = seen.get(title);
    if (other !== undefined) return { problem: `layers ${other} and ${i} are both titled ${JSON.stringify(title)}` };
    seen.set(title, i);
    files.push({ name: title, digest: layer.digest, size: layer.size });
  }
  if (files.length === 0) {
    const listed = unnamed.length > 3 ? [...unnamed.slice(0, 3), `${unnamed.length - 3} more`] : unnamed;
    return { problem: `no layer has an ${TITLE_ANNOTATION} or ${MODELPACK_FILEPATH_ANNOTATION} annotation to name its file (${listed.join('; ')})` };
  }
  return { files, unnamed };
}
