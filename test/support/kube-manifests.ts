// Static pod manifests for kubelet tests: small builders with what a loaded CI box needs (tiny CPU
// requests, so many pods fit the node's 2 cores; a short grace period, so deletions are quick).
import { KIT_IMAGES } from './kubelet.ts';

export type Json = Record<string, unknown>;

export interface ContainerOptions {
  image?: string;
  /** Shell script run by `sh -c` (busybox image). */
  script?: string;
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  /** Any other container fields (probes, volumeMounts, ports...). */
  extra?: Json;
}

/** A container; CPU request 10m unless resources say otherwise. */
export function container(name: string, options: ContainerOptions = {}): Json {
  return {
    name,
    image: options.image ?? KIT_IMAGES.busybox,
    imagePullPolicy: 'IfNotPresent',
    ...(options.script !== undefined ? { command: ['sh', '-c', options.script] } : {}),
    resources: options.resources ?? { requests: { cpu: '10m' } },
    ...options.extra,
  };
}

/** A pod manifest: grace period 1 s unless `spec` says otherwise. */
export function pod(name: string, spec: Json & { containers: Json[] }): { metadata: { name: string }; spec: Json } {
  return { metadata: { name }, spec: { terminationGracePeriodSeconds: 1, ...spec } };
}

/** A Pod object for the API (`kubectl apply`) in namespace `ns`: grace period 1 s unless `spec` says otherwise. */
export function apiPod(ns: string, name: string, spec: Json & { containers: Json[] }, labels: Record<string, string> = {}): Json {
  return { apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: ns, labels }, spec: { terminationGracePeriodSeconds: 1, ...spec } };
}

/** An emptyDir volume and the mount of it at `path`. */
export function emptyDir(name: string, path: string): { volume: Json; mount: Json } {
  return { volume: { name, emptyDir: {} }, mount: { name, mountPath: path } };
}

/**
 * `exec` probe running a shell command; period 1 s, failure threshold 1. The kubelet counts an exec slower
 * than the timeout as a failed probe: a test's probe answers with its command, so a loaded machine's slow
 * exec gets a minute.
 */
export function execProbe(script: string, over: Json = {}): Json {
  return { exec: { command: ['sh', '-c', script] }, periodSeconds: 1, failureThreshold: 1, timeoutSeconds: 60, ...over };
}

/**
 * An exec liveness probe that fails once `file` exists. A restarted container starts on a fresh writable
 * layer without it, so the probe cannot fail before the container's own script has run.
 */
export function livenessUntilFile(file: string): Json {
  return execProbe(`test ! -e ${file}`);
}

/** HTTP GET probe; period 1 s. */
export function httpProbe(port: number, path = '/', over: Json = {}): Json {
  return { httpGet: { path, port }, periodSeconds: 1, failureThreshold: 1, timeoutSeconds: 5, ...over };
}
