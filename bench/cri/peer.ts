// What the benchmark needs from a runtime under test: CRI clients on its socket, its daemon's pid,
// the helper processes it keeps per pod/container (monitors, shims, sandbox holders) for the memory
// numbers, and a teardown that leaves the host as it was.
import type { Client } from 'nice-grpc';
import type { ImageServiceDefinition, RuntimeServiceDefinition } from '../../proto/gen/runtime/v1/api.ts';

export type RuntimeClient = Client<typeof RuntimeServiceDefinition>;
export type ImageClient = Client<typeof ImageServiceDefinition>;

/**
 * `skiffd-cgroupfs`: skiffd with the cgroupfs driver beside skiffd with the systemd one (--drivers).
 * `containerd2`: containerd 2.1, the release users pick today (the conformance kit's containerd2.sh);
 * `containerd`: Debian 12's 1.6.20, kept beside it while Debian ships it.
 */
export type PeerName = 'skiffd' | 'skiffd-cgroupfs' | 'containerd2' | 'containerd';

export const PEER_NAMES: readonly PeerName[] = ['skiffd', 'skiffd-cgroupfs', 'containerd2', 'containerd'];

/** Whether a peer is a containerd, and which release. */
export const CONTAINERD_RELEASE: Partial<Record<PeerName, '2.1' | '1.6'>> = { containerd2: '2.1', containerd: '1.6' };

/** The peer skiffd is judged against: containerd 2.1 when the run has it, else 1.6. */
export function referencePeer<T>(peers: Partial<Record<PeerName, T>>): 'containerd2' | 'containerd' | undefined {
  return peers.containerd2 ? 'containerd2' : peers.containerd ? 'containerd' : undefined;
}

export interface Peer {
  name: PeerName;
  /** e.g. "skiffd 0.1.0 (bundle)" / "containerd 1.6.20~ds1". */
  description: string;
  /** Who makes its pods' and containers' cgroups. */
  cgroupDriver: 'systemd' | 'cgroupfs';
  runtime: RuntimeClient;
  images: ImageClient;
  daemonPid: number;
  /** The CRI unix socket (for clients of its own, such as critest). */
  socket: string;
  /** Non-workload processes the runtime keeps for its pods and containers right now. */
  helperPids(): number[];
  /** The daemon's log so far (for error reports). */
  logs(): string;
  /** Removes every pod it still has, stops the daemon, unmounts, deletes its network and temp dir. */
  teardown(): Promise<void>;
}
