// Parsing and validation of image indexes and manifests (OCI and Docker schema2).
import { ImageError } from './errors.ts';
import { CONFIG_TYPES, LAYER_TYPES, MT } from './media-types.ts';
import { isSha256Digest } from './reference.ts';

export interface Platform {
  os: string;
  architecture: string;
  variant?: string;
}

export interface Descriptor {
  mediaType: string;
  digest: string;
  size: number;
  platform?: Platform;
  urls?: string[];
  annotations?: Record<string, string>;
}

export interface IndexDoc {
  kind: 'index';
  mediaType: string;
  manifests: Descriptor[];
}

export interface ManifestDoc {
  kind: 'manifest';
  mediaType: string;
  config: Descriptor;
  layers: Descriptor[];
  /**
   * Set for an OCI artifact: the manifest's `artifactType`, else its config's media type. An artifact
   * is stored to be mounted as a volume, never run; its layers may be of any media type.
   */
  artifactType?: string;
}

export function parseManifestDoc(body: Buffer, contentType: string, where: string): IndexDoc | ManifestDoc {
  let json: Record<string, unknown>;
  try {
    json = JSON.parse(body.toString('utf8'));
  } catch {
    throw new ImageError('failed-precondition', `${where}: manifest is not valid JSON`);
  }
  if (typeof json !== 'object' || json === null) throw new ImageError('failed-precondition', `${where}: manifest is not a JSON object`);
  // The document's own mediaType wins; a Content-Type counts only when it names a manifest type
  // (some registries answer application/json); otherwise the shape decides.
  const known: string[] = [MT.ociIndex, MT.dockerList, MT.ociManifest, MT.dockerManifest, MT.dockerSchema1, MT.dockerSchema1Signed];
  const mediaType = (typeof json.mediaType === 'string' && json.mediaType) || (known.includes(contentType) ? contentType : '') || guessType(json);
  if (mediaType === MT.dockerSchema1 || mediaType === MT.dockerSchema1Signed || json.schemaVersion === 1) {
    throw new ImageError('failed-precondition', `${where}: Docker schema 1 manifests are not supported (push the image again with a current tool)`);
  }
  if (json.schemaVersion !== 2) throw new ImageError('failed-precondition', `${where}: unsupported manifest schemaVersion ${String(json.schemaVersion)}`);
  if (mediaType === MT.ociIndex || mediaType === MT.dockerList) {
    if (!Array.isArray(json.manifests)) throw new ImageError('failed-precondition', `${where}: index has no manifests array`);
    return { kind: 'index', mediaType, manifests: json.manifests.map((d, i) => descriptor(d, `${where} manifests[${i}]`)) };
  }
  if (mediaType === MT.ociManifest || mediaType === MT.dockerManifest) {
    if (!Array.isArray(json.layers)) throw new ImageError('failed-precondition', `${where}: manifest has no layers array`);
    const config = descriptor(json.config, `${where} config`);
    const layers = json.layers.map((d, i) => descriptor(d, `${where} layers[${i}]`));
    // As CRI-O decides: an OCI manifest with an artifactType, or whose config is not an image config, is an artifact.
    const declared = typeof json.artifactType === 'string' ? json.artifactType : '';
    if (mediaType === MT.ociManifest && (declared || !CONFIG_TYPES.has(config.mediaType))) {
      return { kind: 'manifest', mediaType, config, layers, artifactType: declared || config.mediaType || 'unknown' };
    }
    if (!CONFIG_TYPES.has(config.mediaType)) {
      throw new ImageError(
        'failed-precondition',
        `${where}: config media type ${config.mediaType} is not a container image, and only an OCI manifest can hold an artifact`,
      );
    }
    for (const layer of layers) {
      if (!LAYER_TYPES.has(layer.mediaType)) throw new ImageError('failed-precondition', `${where}: unsupported layer media type ${layer.mediaType}`);
    }
    return { kind: 'manifest', mediaType, config, layers };
  }
  throw new ImageError('failed-precondition', `${where}: unsupported manifest media type "${mediaType}"`);
}

function guessType(json: Record<string, unknown>): string {
  if (Array.isArray(json.manifests)) return MT.ociIndex;
  if (json.config) return MT.ociManifest;
  return '';
}

function descriptor(value: unknown, where: string): Descriptor {
  const d = value as Partial<Descriptor> | null;
  if (!d || typeof d !== 'object') throw new ImageError('failed-precondition', `${where}: not a descriptor`);
  if (typeof d.digest !== 'string' || !isSha256Digest(d.digest)) {
    throw new ImageError('failed-precondition', `${where}: digest ${String(d.digest)} is not a sha256 digest`);
  }
  if (typeof d.size !== 'number' || !Number.isSafeInteger(d.size) || d.size < 0) {
    throw new ImageError('failed-precondition', `${where}: invalid size ${String(d.size)}`);
  }
  return {
    mediaType: typeof d.mediaType === 'string' ? d.mediaType : '',
    digest: d.digest,
    size: d.size,
    platform: d.platform && typeof d.platform === 'object' ? d.platform : undefined,
    urls: Array.isArray(d.urls) ? d.urls : undefined,
    annotations: d.annotations,
  };
}
