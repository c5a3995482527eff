// ListMetricDescriptors: Describes the pod metrics. Not built yet: answers UNIMPLEMENTED.
import type { ListMetricDescriptorsRequest, ListMetricDescriptorsResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import type { UnaryRpc } from '../rpc.ts';
import { unimplemented } from '../unimplemented.ts';

export const listMetricDescriptors: UnaryRpc<ListMetricDescriptorsRequest, ListMetricDescriptorsResponse> = async () =>
  unimplemented('ListMetricDescriptors', 'it serves no cAdvisor-style pod metrics; use ListPodSandboxStats and ListContainerStats');
