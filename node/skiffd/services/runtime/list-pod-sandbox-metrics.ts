// ListPodSandboxMetrics: cAdvisor-style metrics of every ready pod and its running containers, read
// from their cgroups and the pod's network namespace (what `crictl metricsp` prints).
import type { ListPodSandboxMetricsRequest, ListPodSandboxMetricsResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import { collectPodMetrics } from '../../pod-metrics/collect.ts';
import type { UnaryRpc } from '../rpc.ts';

export const listPodSandboxMetrics: UnaryRpc<ListPodSandboxMetricsRequest, ListPodSandboxMetricsResponse> = async (ctx) => {
  const [pods, containers] = await Promise.all([ctx.pods.filter({ state: 'SANDBOX_READY' }), ctx.containers.list()]);
  return { podMetrics: await Promise.all(pods.map((pod) => collectPodMetrics(pod, containers, ctx.containers, ctx.log))) };
};
