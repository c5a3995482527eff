// What the kubelet and cluster parts share: the kit's registry with every registry the kubelet's pods
// name mirrored to it, and a runtime started fresh for one run (skiffd with the bench's flags, or containerd).
import type { BenchArgs } from './args.ts';
import { startKitRegistry } from '../../test/support/cri-conformance.ts';
import { freePort } from '../../test/support/netns.ts';
import { startContainerdPeer } from './containerd-peer.ts';
import { KIT_PAUSE_IMAGE } from './kubelet-node.ts';
import { CONTAINERD_RELEASE, type Peer, type PeerName } from './peer.ts';
import { startSkiffdPeer } from './skiffd-peer.ts';

type Undo = { what: string; fn: () => Promise<void> };

export interface KitMirrors {
  /** host:port of the kit's registry. */
  host: string;
  /** Every registry the kit's images name, mirrored to it. */
  mirrors: Record<string, string>;
}

/** Starts the kit's registry (stopped by `undo`). */
export async function startKitMirrors(undo: Undo[]): Promise<KitMirrors> {
  const kit = await startKitRegistry(await freePort());
  undo.push({ what: 'stopping the kit registry', fn: () => kit.stop() });
  const mirrors = Object.fromEntries(['registry.k8s.io', 'k8s.gcr.io', 'gcr.io', 'public.ecr.aws', 'docker.io'].map((h) => [h, kit.url]));
  return { host: new URL(kit.url).host, mirrors };
}

/** A runtime started fresh under `peerDir`, pulling through the kit's registry. */
export function startNodePeer(name: PeerName, peerDir: string, kit: KitMirrors, args: BenchArgs): Promise<Peer> {
  return name === 'skiffd'
    ? startSkiffdPeer(peerDir, kit.host, args.skiffd, {
        mirrors: kit.mirrors,
        nodeFlags: [...(args.skiffdCpuProf ? ['--cpu-prof', `--cpu-prof-dir=${args.skiffdCpuProf}`] : []), ...args.skiffdNodeFlags],
      })
    : startContainerdPeer(peerDir, kit.host, KIT_PAUSE_IMAGE, kit.mirrors, CONTAINERD_RELEASE[name] ?? '1.6');
}
