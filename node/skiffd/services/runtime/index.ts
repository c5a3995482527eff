// The RuntimeService: one handler per RPC, one file per handler (CRI-O style), bound to the daemon context.
import type { RuntimeServiceImplementation } from '../../../../proto/gen/runtime/v1/api.ts';
import type { DaemonContext } from '../../context.ts';
import { bindHandlers } from '../bind.ts';
import { version } from './version.ts';
import { runPodSandbox } from './run-pod-sandbox.ts';
import { stopPodSandbox } from './stop-pod-sandbox.ts';
import { removePodSandbox } from './remove-pod-sandbox.ts';
import { podSandboxStatus } from './pod-sandbox-status.ts';
import { listPodSandbox } from './list-pod-sandbox.ts';
import { streamPodSandboxes } from './stream-pod-sandboxes.ts';
import { createContainer } from './create-container.ts';
import { startContainer } from './start-container.ts';
import { stopContainer } from './stop-container.ts';
import { removeContainer } from './remove-container.ts';
import { listContainers } from './list-containers.ts';
import { streamContainers } from './stream-containers.ts';
import { containerStatus } from './container-status.ts';
import { updateContainerResources } from './update-container-resources.ts';
import { reopenContainerLog } from './reopen-container-log.ts';
import { execSync } from './exec-sync.ts';
import { exec } from './exec.ts';
import { attach } from './attach.ts';
import { portForward } from './port-forward.ts';
import { containerStats } from './container-stats.ts';
import { listContainerStats } from './list-container-stats.ts';
import { streamContainerStats } from './stream-container-stats.ts';
import { podSandboxStats } from './pod-sandbox-stats.ts';
import { listPodSandboxStats } from './list-pod-sandbox-stats.ts';
import { streamPodSandboxStats } from './stream-pod-sandbox-stats.ts';
import { updateRuntimeConfig } from './update-runtime-config.ts';
import { status } from './status.ts';
import { checkpointContainer } from './checkpoint-container.ts';
import { getContainerEvents } from './get-container-events.ts';
import { listMetricDescriptors } from './list-metric-descriptors.ts';
import { listPodSandboxMetrics } from './list-pod-sandbox-metrics.ts';
import { streamPodSandboxMetrics } from './stream-pod-sandbox-metrics.ts';
import { runtimeConfig } from './runtime-config.ts';
import { updatePodSandboxResources } from './update-pod-sandbox-resources.ts';

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
