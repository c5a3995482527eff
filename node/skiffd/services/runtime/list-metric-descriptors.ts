// ListMetricDescriptors: the cAdvisor-style metrics ListPodSandboxMetrics serves, with their label keys.
import type { ListMetricDescriptorsRequest, ListMetricDescriptorsResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import { metricDescriptors } from '../../pod-metrics/descriptors.ts';
import type { UnaryRpc } from '../rpc.ts';

export const listMetricDescriptors: UnaryRpc<ListMetricDescriptorsRequest, ListMetricDescriptorsResponse> = async () => ({
  descriptors: metricDescriptors(),
});
