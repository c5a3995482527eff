// The on-disk form of a pod record (`<root>/pods/<id>/pod.json`). JSON cannot hold bigints, and the
// client's PodSandboxConfig carries int64 fields, so the config is kept as its protobuf bytes.
import { PodSandboxConfig } from '../../../proto/gen/runtime/v1/api.ts';
import type { NetworkAttachment } from '../network/cni.ts';
import type { PidInit } from './pid-init.ts';
import type { PodSandboxRecord } from './types.ts';

export const RECORD_VERSION = 1;

/** What the pods subsystem knows beyond the shared record: how to undo what it set up. */
export interface PodInternals {
  /** Absent for node-network pods. `attached` turns false once CNI DEL succeeded. */
  network?: { attachment: NetworkAttachment; attached: boolean };
  pidInit?: PidInit;
  /** The cgroup parent is ours (no client parent): remove it with the pod. */
  ownsCgroup: boolean;
}

export type PodEntry = PodSandboxRecord & { internals: PodInternals };

interface PodFile {
  version: number;
  record: Omit<PodSandboxRecord, 'createdAt' | 'config'> & { createdAt: string; config: string };
  internals: PodInternals;
}

export function toFile(entry: PodEntry): PodFile {
  const { internals, createdAt, config, ...rest } = entry;
  return {
    version: RECORD_VERSION,
    record: { ...rest, createdAt: createdAt.toString(), config: Buffer.from(PodSandboxConfig.encode(config).finish()).toString('base64') },
    internals,
  };
}

export function fromFile(file: PodFile, path: string): PodEntry {
  if (!file || file.version !== RECORD_VERSION || !file.record || !file.internals) {
    throw new Error(`pod record ${path} has an unknown format (version ${file?.version})`);
  }
  const { createdAt, config, ...rest } = file.record;
  return {
    ...rest,
    createdAt: BigInt(createdAt),
    config: PodSandboxConfig.decode(Buffer.from(config, 'base64')),
    internals: file.internals,
  };
}
