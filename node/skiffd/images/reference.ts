// Image reference parsing with Docker's normalisation rules: `busybox` is
// `docker.io/library/busybox:latest`, a name without a registry host lives on docker.io, and a pull
// without tag or digest means `:latest`.
import { ImageError } from './errors.ts';

export const DOCKER_HUB = 'docker.io';
/** Where docker.io's distribution API is actually served. */
export const DOCKER_HUB_API_HOST = 'registry-1.docker.io';

export interface ImageReference {
  /** Registry host (with port when given), e.g. `docker.io`, `registry.k8s.io`, `127.0.0.1:5000`. */
  registry: string;
  /** Repository path inside the registry, e.g. `library/busybox`. */
  repository: string;
  tag?: string;
  digest?: string;
}

const COMPONENT = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$/;
const TAG = /^[\w][\w.-]{0,127}$/;
const DIGEST = /^[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[a-zA-Z0-9=_-]+$/;
const SHA256_DIGEST = /^sha256:[a-f0-9]{64}$/;
const HOST = /^(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*|\[[a-fA-F0-9:]+\])(?::[0-9]+)?$/;

export function isSha256Digest(value: string): boolean {
  return SHA256_DIGEST.test(value);
}

export function parseReference(input: string): ImageReference {
  const text = input.trim();
  if (text === '') throw new ImageError('invalid-argument', 'image reference is empty');
  let name = text;
  let digest: string | undefined;
  const at = text.indexOf('@');
  if (at >= 0) {
    name = text.slice(0, at);
    digest = text.slice(at + 1);
    if (!DIGEST.test(digest)) throw new ImageError('invalid-argument', `image reference "${input}": invalid digest "${digest}"`);
    if (!digest.startsWith('sha256:')) {
      throw new ImageError('invalid-argument', `image reference "${input}": only sha256 digests are supported`);
    }
    if (!SHA256_DIGEST.test(digest)) throw new ImageError('invalid-argument', `image reference "${input}": a sha256 digest has 64 lowercase hex digits`);
  }
  let tag: string | undefined;
  const lastSlash = name.lastIndexOf('/');
  const colon = name.lastIndexOf(':');
  if (colon > lastSlash) {
    tag = name.slice(colon + 1);
    name = name.slice(0, colon);
    if (!TAG.test(tag)) throw new ImageError('invalid-argument', `image reference "${input}": invalid tag "${tag}"`);
  }
  let registry = DOCKER_HUB;
  let path = name;
  const slash = name.indexOf('/');
  if (slash >= 0) {
    const first = name.slice(0, slash);
    if (first.includes('.') || first.includes(':') || first === 'localhost' || first.startsWith('[')) {
      registry = first;
      path = name.slice(slash + 1);
      if (!HOST.test(registry)) throw new ImageError('invalid-argument', `image reference "${input}": invalid registry host "${registry}"`);
    }
  }
  if (registry === 'index.docker.io' || registry === DOCKER_HUB_API_HOST) registry = DOCKER_HUB;
  if (registry === DOCKER_HUB && !path.includes('/')) path = `library/${path}`;
  if (path === '') throw new ImageError('invalid-argument', `image reference "${input}": missing repository name`);
  for (const component of path.split('/')) {
    if (!COMPONENT.test(component)) {
      throw new ImageError(
        'invalid-argument',
        `image reference "${input}": invalid repository component "${component}" (lowercase letters, digits and separators . _ - only)`,
      );
    }
  }
  if (registry.length + 1 + path.length > 255) throw new ImageError('invalid-argument', `image reference "${input}": name longer than 255 characters`);
  if (!tag && !digest) tag = 'latest';
  return { registry, repository: path, tag, digest };
}

/** `docker.io/library/busybox` */
export function repositoryName(ref: ImageReference): string {
  return `${ref.registry}/${ref.repository}`;
}

/** The fully-qualified string form: `name:tag`, `name@digest`, or `name:tag@digest`. */
export function formatReference(ref: ImageReference): string {
  let out = repositoryName(ref);
  if (ref.tag) out += `:${ref.tag}`;
  if (ref.digest) out += `@${ref.digest}`;
  return out;
}

/** The reference a pull dedupes on and a tag records: digest wins over tag when both are given. */
export function pullKey(ref: ImageReference): string {
  return ref.digest ? `${repositoryName(ref)}@${ref.digest}` : `${repositoryName(ref)}:${ref.tag}`;
}
