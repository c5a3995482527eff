// The RuntimeService: one handler per RPC, one file per handler (CRI-O style), bound to the daemon context.
import type { RuntimeServiceImplementation } from '../../../../proto/gen/runtime/v1/api.ts';
import type { DaemonContext } from '../../context.ts';
import { bindHandlers } from '../bind.ts';
import { version } from './version.ts';
import { runPodSandbox } from './run_pod_sandbox.ts';
import { stopPodSandbox } from './stop_pod_sandbox.ts';
import { removePodSandbox } from './remove_pod_sandbox.ts';
import { podSandboxStatus } from './pod_sandbox_status.ts';
import { listPodSandbox } from './list_pod_sandbox.ts';
import { streamPodSandboxes } from './stream_pod_sandboxes.ts';
import { createContainer } from './create_container.ts';
import { startContainer } from './start_container.ts';
import { stopContainer } from './stop_container.ts';
import { removeContainer } from './remove_container.ts';
import { listContainers } from './list_containers.ts';
import { streamContainers } from './stream_containers.ts';
import { containerStatus } from './container_status.ts';
import { updateContainerResources } from './update_container_resources.ts';
import { reopenContainerLog } from './reopen_container_log.ts';
import { execSync } from './exec_sync.ts';
import { exec } from './exec.ts';
import { attach } from './attach.ts';
import { portForward } from './port_forward.ts';
import { containerStats } from './container_stats.ts';
import { listContainerStats } from './list_container_stats.ts';
import { streamContainerStats } from './stream_container_stats.ts';
import { podSandboxStats } from './pod_sandbox_stats.ts';
import { listPodSandboxStats } from './list_pod_sandbox_stats.ts';
import { streamPodSandboxStats } from './stream_pod_sandbox_stats.ts';
import { updateRuntimeConfig } from './update_runtime_config.ts';
import { status } from './status.ts';
import { checkpointContainer } from './checkpoint_container.ts';
import { getContainerEvents } from './get_container_events.ts';
import { listMetricDescriptors } from './list_metric_descriptors.ts';
import { listPodSandboxMetrics } from './list_pod_sandbox_metrics.ts';
import { streamPodSandboxMetrics } from './stream_pod_sandbox_metrics.ts';
import { runtimeConfig } from './runtime_config.ts';
import { updatePodSandboxResources } from './update_pod_sandbox_resources.ts';

export function runtimeService(ctx: DaemonContext): RuntimeServiceImplementation {
  return bindHandlers<RuntimeServiceImplementation>(ctx, {
    version,
    runPodSandbox,
    stopPodSandbox,
    removePodSandbox,
    podSandboxStatus,
    listPodSandbox,
    streamPodSandboxes,
    createContainer,
    startContainer,
    stopContainer,
    removeContainer,
    listContainers,
    streamContainers,
    containerStatus,
    updateContainerResources,
    reopenContainerLog,
    execSync,
    exec,
    attach,
    portForward,
    containerStats,
    listContainerStats,
    streamContainerStats,
    podSandboxStats,
    listPodSandboxStats,
    streamPodSandboxStats,
    updateRuntimeConfig,
    status,
    checkpointContainer,
    getContainerEvents,
    listMetricDescriptors,
    listPodSandboxMetrics,
    streamPodSandboxMetrics,
    runtimeConfig,
    updatePodSandboxResources,
  });
}
