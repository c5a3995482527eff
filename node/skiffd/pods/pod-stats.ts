// PodSandboxStats and ListPodSandboxStats, read through the collector in stats.ts.
import type { DeepPartial, PodSandboxStats } from '../../../proto/gen/runtime/v1/api.ts';
import { nowNs } from '../util/clock.ts';
import { notFound, requireId, toServerError } from './errors.ts';
import { filterPods } from './status.ts';
import type { PodStore } from './store.ts';
import type { PodSandboxFilterSpec } from './types.ts';

export async function podStats(store: PodStore, idOrPrefix: string): Promise<DeepPartial<PodSandboxStats>> {
  requireId(idOrPrefix);
  const entry = store.resolve(idOrPrefix) ?? notFound(idOrPrefix);
  return store.statsCollector.collect(entry, nowNs).catch((err) => {
    throw toServerError(err, 'PodSandboxStats');
  });
}

export async function listPodStats(store: PodStore, spec: PodSandboxFilterSpec): Promise<DeepPartial<PodSandboxStats>[]> {
  const pods = await filterPods(store, spec);
  return Promise.all(pods.map((p) => store.statsCollector.collect(p, nowNs))).catch((err) => {
    throw toServerError(err, 'ListPodSandboxStats');
  });
}
