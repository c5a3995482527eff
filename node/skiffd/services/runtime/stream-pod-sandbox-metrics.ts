// StreamPodSandboxMetrics: Metrics of every pod, in chunks. Not built yet: answers UNIMPLEMENTED.
import type { StreamPodSandboxMetricsRequest, StreamPodSandboxMetricsResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import type { ServerStreamingRpc } from '../rpc.ts';
import { unimplemented } from '../unimplemented.ts';

// biome-ignore lint/correctness/useYield: it refuses before its first message
export const streamPodSandboxMetrics: ServerStreamingRpc<StreamPodSandboxMetricsRequest, StreamPodSandboxMetricsResponse> = async function* () {
  unimplemented('StreamPodSandboxMetrics', 'it serves no cAdvisor-style pod metrics; use ListPodSandboxStats and ListContainerStats');
};
