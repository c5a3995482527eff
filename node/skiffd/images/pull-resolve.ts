// The first step of a pull: from a reference to the one image manifest for this host, checked
// against the digests that name it (an index is narrowed to the host's platform).
import { sha256 } from './blob-store.ts';
import { ImageError } from './errors.ts';
import { parseManifestDoc, type ManifestDoc } from './manifest.ts';
import { formatPlatform, hostPlatform, pickPlatform } from './platform.ts';
import type { ImageReference } from './reference.ts';
import type { RegistryClient } from './registry-client.ts';
import type { Logger } from '../logger.ts';

export interface ResolvedManifest {
  /** Digest of what the reference names (an index or a manifest): the repo digest. */
  topDigest: string;
  /** The image manifest for this host, and its digest. */
  manifest: ManifestDoc;
  manifestDigest: string;
  /** The manifest documents fetched (the index first, if any), stored with the image. */
  manifestBlobs: { digest: string; data: Buffer }[];
}

export async function resolveManifest(client: RegistryClient, ref: ImageReference, name: string, log: Logger): Promise<ResolvedManifest> {
  const top = await client.getManifest(ref.digest ?? ref.tag!);
  const topDigest = sha256(top.body);
  if (ref.digest && topDigest !== ref.digest) {
    throw new ImageError('data-loss', `${name}: ${top.endpoint.host} served a manifest with digest ${topDigest}: refusing it`);
  }
  const where = `${name} (${top.endpoint.host})`;
  const topDoc = parseManifestDoc(top.body, top.contentType, where);
  const manifestBlobs: { digest: string; data: Buffer }[] = [{ digest: topDigest, data: top.body }];
  if (topDoc.kind !== 'index') return { topDigest, manifest: topDoc, manifestDigest: topDigest, manifestBlobs };
  const host = hostPlatform();
  const picked = pickPlatform(topDoc.manifests, host);
  if (!picked) {
    const offered = topDoc.manifests.map((m) => (m.platform ? formatPlatform(m.platform) : 'unknown')).join(', ');
    throw new ImageError('not-found', `${name} has no image for ${formatPlatform(host)} (it offers: ${offered || 'nothing'})`);
  }
  const child = await client.getManifest(picked.digest);
  const childDigest = sha256(child.body);
  if (childDigest !== picked.digest || child.body.length !== picked.size) {
    throw new ImageError(
      'data-loss',
      `${name}: manifest ${picked.digest} from ${child.endpoint.host} does not match its index entry (digest ${childDigest}, ${child.body.length} bytes): refusing it`,
    );
  }
  const doc = parseManifestDoc(
    child.body,
    child.contentType || picked.mediaType,
    `${name} ${picked.platform ? formatPlatform(picked.platform) : picked.digest}`,
  );
  if (doc.kind !== 'manifest') throw new ImageError('failed-precondition', `${name}: an index entry points to another index`);
  manifestBlobs.push({ digest: childDigest, data: child.body });
  log.info('picked platform manifest', { platform: picked.platform ? formatPlatform(picked.platform) : 'unlabelled', manifest: childDigest });
  return { topDigest, manifest: doc, manifestDigest: childDigest, manifestBlobs };
}
