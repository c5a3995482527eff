// StreamPodSandboxMetrics: what ListPodSandboxMetrics answers, one message per pod, then the stream ends.
import type { StreamPodSandboxMetricsRequest, StreamPodSandboxMetricsResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import { collectPodMetrics } from '../../pod-metrics/collect.ts';
import type { ServerStreamingRpc } from '../rpc.ts';

export const streamPodSandboxMetrics: ServerStreamingRpc<StreamPodSandboxMetricsRequest, StreamPodSandboxMetricsResponse> = async function* (ctx) {
  const [pods, containers] = await Promise.all([ctx.pods.filter({ state: 'SANDBOX_READY' }), ctx.containers.list()]);
  for (const pod of pods) yield { podSandboxMetrics: [await collectPodMetrics(pod, containers, ctx.containers, ctx.log)] };
};
