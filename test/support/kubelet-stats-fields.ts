// The shape of what a kubelet serves about one pod, values left out: the JSON paths of its entry in
// /stats/summary (containers by name, other lists as `[]`) and the names of the /metrics/cadvisor series
// labelled with it. Two runtimes' pods are compared by these.
import type { StatsPod } from './kube-types.ts';

/** Every leaf path of the pod's summary entry: `cpu.psi.some.total`, `containers[spin].swap.swapUsageBytes`, `volume[].name`. */
export function summaryFieldPaths(pod: StatsPod): string[] {
  const out = new Set<string>();
  const walk = (v: unknown, path: string) => {
    if (Array.isArray(v)) {
      for (const item of v) {
        const named = path === 'containers' && item && typeof item === 'object' ? (item as { name?: string }).name : undefined;
        walk(item, named ? `${path}[${named}]` : `${path}[]`);
      }
    } else if (v && typeof v === 'object') {
      for (const [k, child] of Object.entries(v)) walk(child, path ? `${path}.${k}` : k);
    } else out.add(path);
  };
  walk(pod, '');
  return [...out].sort();
}

/**
 * The names of the series in a Prometheus text page whose labels name the pod (`pod="NAME"`), each with
 * `{container}` when a container label is set and not empty (the pod's own series have none).
 */
export function cadvisorMetricNames(text: string, podName: string): string[] {
  const out = new Set<string>();
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)\{(.*)\}\s/.exec(line);
    if (!m?.[2].includes(`pod="${podName}"`)) continue;
    const container = /(?:^|,)container="([^"]*)"/.exec(m[2])?.[1];
    out.add(container ? `${m[1]}{container}` : m[1]);
  }
  return [...out].sort();
}

/** What `a` has and `b` lacks. */
export const lacking = (a: string[], b: string[]) => a.filter((x) => !b.includes(x));
