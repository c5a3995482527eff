// ListPodSandboxMetrics: Metrics of every pod. Not built yet: answers UNIMPLEMENTED.
import type { ListPodSandboxMetricsRequest, ListPodSandboxMetricsResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import type { UnaryRpc } from '../rpc.ts';
import { unimplemented } from '../unimplemented.ts';

export const listPodSandboxMetrics: UnaryRpc<ListPodSandboxMetricsRequest, ListPodSandboxMetricsResponse> = async () =>
  unimplemented('ListPodSandboxMetrics', 'it serves no cAdvisor-style pod metrics; use ListPodSandboxStats and ListContainerStats');
