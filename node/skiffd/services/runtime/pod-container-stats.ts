// The containers' share of PodSandboxStats: `linux.containers` holds ContainerStats for every container
// of the pod. The kubelet's CRI stats provider (feature gate PodAndContainerStatsFromCRI) builds each
// pod's container list in /stats/summary from this field alone, so leaving it empty hides every
// container of every pod.
import type { DeepPartial, PodSandboxStats } from '../../../../proto/gen/runtime/v1/api.ts';
import { containerStats } from '../../containers/cri.ts';
import type { DaemonContext } from '../../context.ts';

/** Adds each pod's container stats to its PodSandboxStats, listing the containers once. */
export async function withContainerStats(ctx: DaemonContext, pods: DeepPartial<PodSandboxStats>[]): Promise<DeepPartial<PodSandboxStats>[]> {
  if (pods.length === 0) return pods;
  const wanted = new Set(pods.map((p) => p.attributes?.id));
  const views = (await ctx.containers.list()).filter((v) => wanted.has(v.record.podSandboxId));
  const stats = await Promise.all(views.map(async (v) => ({ podId: v.record.podSandboxId, stats: await containerStats(ctx.containers, v) })));
  for (const pod of pods) {
    pod.linux = { ...pod.linux, containers: stats.filter((s) => s.podId === pod.attributes?.id).map((s) => s.stats) };
  }
  return pods;
}
