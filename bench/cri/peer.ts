// What the benchmark needs from a runtime under test: CRI clients on its socket, its daemon's pid,
// the helper processes it keeps per pod/container (monitors, shims, sandbox holders) for the memory
// numbers, and a teardown that leaves the host as it was.
import type { Client } from 'nice-grpc';
import type { ImageServiceDefinition, RuntimeServiceDefinition } from '../../proto/gen/runtime/v1/api.ts';

export type RuntimeClient = Client<typeof RuntimeServiceDefinition>;
export type ImageClient = Client<typeof ImageServiceDefinition>;

/** `skiffd-cgroupfs`: skiffd with the cgroupfs driver beside skiffd with the systemd one (--drivers). */
export type PeerName = 'skiffd' | 'skiffd-cgroupfs' | 'containerd';

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
