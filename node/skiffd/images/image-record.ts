// The JSON record kept per image, named by its id (the config digest).

/** The runtime-relevant part of an OCI / Docker image config. */
export interface ImageRunConfig {
  User?: string;
  Env?: string[];
  Entrypoint?: string[];
  Cmd?: string[];
  WorkingDir?: string;
  StopSignal?: string;
  ExposedPorts?: Record<string, unknown>;
  Volumes?: Record<string, unknown>;
  Labels?: Record<string, string>;
}

export interface ImageConfigDoc {
  architecture?: string;
  os?: string;
  variant?: string;
  created?: string;
  config?: ImageRunConfig;
  rootfs?: { type?: string; diff_ids?: string[] };
  [key: string]: unknown;
}

export interface LayerRef {
  digest: string;
  mediaType: string;
  size: number;
  diffId: string;
}

export interface ImageRecord {
  version: 1;
  /** `sha256:` + config digest hex. */
  id: string;
  /** `docker.io/library/busybox:latest` */
  repoTags: string[];
  /** `docker.io/library/busybox@sha256:...` (the digest the registry resolved the name to). */
  repoDigests: string[];
  /** Compressed layers + config + manifest, in bytes. */
  size: number;
  manifestDigest: string;
  manifestMediaType: string;
  layers: LayerRef[];
  /** Every blob the image holds on to (indexes, manifest, config, layers). */
  blobs: string[];
  config: ImageConfigDoc;
  pulledAt: string;
  /**
   * Set for an OCI artifact: it can be mounted as an image volume but not run. Its one "layer" is then
   * the volume's tree of files, keyed by the manifest digest, or there is none and `unmountable` says why.
   */
  artifact?: { artifactType: string; unmountable?: string };
}
