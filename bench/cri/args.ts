// Command-line flags of `npm run bench:cri` (tsx bench/cri/run.ts).
import { resolve } from 'node:path';
import type { PeerName } from './peer.ts';
import type { SkiffdBuild } from './skiffd-peer.ts';

export interface BenchArgs {
  help: boolean;
  samples: number;
  warmup: number;
  only?: PeerName;
  /** skiffd once per cgroup driver (systemd and cgroupfs) beside containerd. */
  drivers: boolean;
  json: boolean;
  skiffd: SkiffdBuild;
  memoryContainers: number;
  /** Runs of `critest -benchmark` per runtime (0 skips it). */
  critestRounds: number;
  rpcTimeoutMs: number;
  timeoutS: number;
  keep: boolean;
  /** The kubelet part instead of the per-call parts. */
  kubelet: boolean;
  /** The cluster part (pod start-up through the API) instead of the per-call parts. */
  cluster: boolean;
  /** The NRI part (NRI off, on, and with the sample logger, on skiffd and containerd 2.1) instead of the per-call parts. */
  nri: boolean;
  kubeletPods: number[];
  steadyS: number;
  settleS: number;
  /** Run skiffd with node --cpu-prof, writing its profile into this directory. */
  skiffdCpuProf?: string;
  /** More node flags for skiffd (e.g. --heapsnapshot-signal=SIGUSR2). */
  skiffdNodeFlags: string[];
  /** skiffd logs each call's time in its handler (debug), reported beside the client's latency. */
  handlerTimes: boolean;
}

export const HELP = `Usage: npm run bench:cri -- [flags]      (or: tsx bench/cri/run.ts [flags]; needs root)

Measures CRI call latency of skiffd and of containerd 2.1 (the conformance kit's) and containerd 1.6
(Debian 12's), each where it is available, through the same nice-grpc client in the same run, against a
private docker-registry on loopback:
  lifecycle, per sample: RunPodSandbox, CreateContainer (busybox), StartContainer, StopContainer,
             RemoveContainer, StopPodSandbox, RemovePodSandbox
  images, per sample:    PullImage (about 1 MB, shares no layer with anything kept), ListImages,
             RemoveImage (so every pull is a full one)
Prints p50/p90 in ms per call and runtime, the ratio skiffd/containerd, the targets from the design
note, and memory: the daemon's idle RSS and what each running container adds (daemon + monitors).
Then critest's own benchmark (\`critest -benchmark\`, cri-tools 1.36, with the conformance kit's
benchmark-params.yaml: 50 pods, 50 containers, 20 images, serial) against each runtime in turn, with
p50 and p99 per operation and the ratio skiffd/containerd. It needs the kit at ../shared/cri-conformance
(or CRI_CONFORMANCE_DIR); without it that part is skipped with a note.
Everything runs under its own temp dir, sockets, CNI network (bridge + subnet) and runc root, and is
removed at the end, also on errors and Ctrl-C.

Flags:
  --samples N            measured samples per call (default 30, at least 1)
  --warmup N             untimed samples run first (default 2)
  --only skiffd|containerd2|containerd
                         measure one runtime only (containerd2 is containerd 2.1, containerd is 1.6)
  --drivers              on a node booted with systemd: skiffd twice, with the systemd and with the
                         cgroupfs cgroup driver (skiffd-cgroupfs), beside containerd with
                         SystemdCgroup = true; adds the ratio of skiffd's systemd driver to its cgroupfs one.
                         Without it, containerd's driver follows the host (systemd where it is PID 1)
                         and skiffd runs with its default (auto), so both match.
                         Under the systemd driver every pod names a slice of its own as its cgroup parent,
                         as a kubelet's pods do (skiffbench-pod<uid>.slice, stopped at the end)
  --json                 print the results as JSON on stdout (progress stays on stderr);
                         with npm use \`npm run -s bench:cri -- --json\` so npm's banner stays out
  --skiffd-bin PATH      run this skiffd build (dist/skiffd.cjs or the executable dist/skiffd)
                         instead of bundling the working tree (the default)
  --from-source          run skiffd from the sources through tsx instead of a bundle
  --skiffd-cpu-prof DIR  run skiffd under node --cpu-prof, profiles written to DIR (per peer name in
                         the per-call part; summarise one with bench/cri/profile-summary.ts, cut to the
                         kubelet part's steady window with its --json window)
  --skiffd-node-flag F   a node flag for skiffd (repeatable), e.g. --skiffd-node-flag=--heapsnapshot-signal=SIGUSR2
  --handler-times        run skiffd at log level debug and report, per call, the time its handlers took
                         (from the call reaching the daemon's middleware to its answer) beside the
                         client's latency: what is the daemon's work and what is gRPC and the socket.
                         Logging every call costs a little of its own
  --memory-containers N  running containers for the per-container memory figure (default 10, 0 skips)
  --critest-rounds N     runs of critest -benchmark per runtime, alternating which goes first
                         (default 1, 0 skips)
  --rpc-timeout MS       deadline of every CRI call (default 30000)
  --timeout S            the whole run stops itself after S seconds (default 1800)
  --keep                 keep the temp dir (logs, configs) for inspection
  -h, --help             this text

The kubelet part (--kubelet, instead of the parts above): the conformance kit's kubelet 1.36 runs the
same static pods against skiffd and then containerd, each started fresh: the kit's nginx stand-in with
an HTTP readiness probe every 2 s and an exec liveness probe every 5 s, 5m CPU requested. It prints the
time to all pods Ready, runtime CPU over a steady window from /proc ticks (daemon, helpers, total), PSS
(daemon, helpers, total), the kubelet's own CPU, and the ratios to containerd against the targets.
Each kubelet run holds /run/skiff-kubelet.lock (flock -w 1500) from its start to the end of cleanup.
  --kubelet              run the kubelet part
  --pods N[,N...]        pod counts, one run per count and runtime (default 30,100)
  --steady S             seconds of the steady window (default 60)
  --settle S             seconds after all pods are Ready before the window (default 15)

The cluster part (--cluster, instead of the parts above): pod start-up through the API. The kit's
cluster.sh starts etcd, kube-apiserver, kube-controller-manager and kube-scheduler on loopback once;
skiffd and then containerd, each started fresh, becomes the node \`localhost\` under the kit's kubelet
joined to it, and a Deployment of N replicas of the same pod as the kubelet part is created with the
images already on the node. A watch on the API times each pod from its creation to all its containers
running: p50, p90, p99 and the time to the last one; then the runtime's CPU and PSS over a steady
window while they run. Targets: skiffd's p99 within the pod start-up SLO (5 s) at 30 pods, and at most
0.5 of containerd 2.1's at 100. The node settles for --settle seconds after it is Ready and before the
Deployment. --pods, --steady, --settle and --only apply as for --kubelet.
  --cluster              run the cluster part

The NRI part (--nri, instead of the parts above): what NRI costs on the CRI path. skiffd and containerd
2.1 each run three ways at once: NRI off, NRI on with no plugin, and NRI on with the conformance kit's
containerd/nri sample logger attached (\`logger -idx 10 -name logger -log-file F -add-env NRI_BENCH\`, the
same for both). The lifecycle workload above runs on all six, interleaved sample by sample with the order
rotated; it prints p50 / p90 per call and variant, and the ratios NRI on / off, logger / off, and
skiffd / containerd 2.1 with the logger. --samples, --warmup and --skiffd-bin apply.
  --nri                  run the NRI part

containerd: skiffd is judged against containerd 2.1 (containerd2), the release users pick today, which the
conformance kit's containerd2.sh brings from Debian unstable into a cache (../shared/cri-conformance or
CRI_CONFORMANCE_DIR); containerd 1.6.20 (containerd) runs beside it when \`containerd\` is on PATH
(apt-get install containerd). Without 2.1 the ratios are to 1.6. The benchmark starts its own containerds
with generated configs; no system service is used.
`;

function int(flag: string, value: string | undefined, min: number): number {
  const n = Number(value);
  if (value === undefined || !Number.isInteger(n) || n < min)
    throw new Error(`${flag} needs an integer >= ${min}, got ${value === undefined ? 'nothing' : JSON.stringify(value)}`);
  return n;
}

export function parseArgs(argv: string[]): BenchArgs {
  const a: BenchArgs = {
    help: false,
    samples: 30,
    warmup: 2,
    json: false,
    drivers: false,
    skiffd: { kind: 'bundle' },
    memoryContainers: 10,
    critestRounds: 1,
    rpcTimeoutMs: 30_000,
    timeoutS: 1800,
    keep: false,
    kubelet: false,
    cluster: false,
    nri: false,
    kubeletPods: [30, 100],
    steadyS: 60,
    settleS: 15,
    skiffdNodeFlags: [],
    handlerTimes: false,
  };
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] =
      argv[i].startsWith('--') && argv[i].includes('=')
        ? [argv[i].slice(0, argv[i].indexOf('=')), argv[i].slice(argv[i].indexOf('=') + 1)]
        : [argv[i], undefined];
    const value = () => inline ?? argv[++i];
    switch (flag) {
      case '-h':
      case '--help':
        a.help = true;
        break;
      case '--drivers':
        a.drivers = true;
        break;
      case '--samples':
        a.samples = int(flag, value(), 1);
        break;
      case '--warmup':
        a.warmup = int(flag, value(), 0);
        break;
      case '--only': {
        const v = value();
        if (v !== 'skiffd' && v !== 'containerd' && v !== 'containerd2')
          throw new Error(`--only takes skiffd, containerd2 or containerd, got ${JSON.stringify(v)}`);
        a.only = v;
        break;
      }
      case '--json':
        a.json = true;
        break;
      case '--skiffd-bin': {
        const v = value();
        if (!v) throw new Error('--skiffd-bin needs a path');
        a.skiffd = { kind: 'binary', path: resolve(v) };
        break;
      }
      case '--from-source':
        a.skiffd = { kind: 'source' };
        break;
      case '--memory-containers':
        a.memoryContainers = int(flag, value(), 0);
        break;
      case '--critest-rounds':
        a.critestRounds = int(flag, value(), 0);
        break;
      case '--rpc-timeout':
        a.rpcTimeoutMs = int(flag, value(), 100);
        break;
      case '--timeout':
        a.timeoutS = int(flag, value(), 10);
        break;
      case '--kubelet':
        a.kubelet = true;
        break;
      case '--cluster':
        a.cluster = true;
        break;
      case '--nri':
        a.nri = true;
        break;
      case '--pods': {
        const v = value() ?? '';
        a.kubeletPods = v.split(',').map((n) => int(flag, n, 1));
        break;
      }
      case '--steady':
        a.steadyS = int(flag, value(), 5);
        break;
      case '--settle':
        a.settleS = int(flag, value(), 0);
        break;
      case '--skiffd-cpu-prof': {
        const v = value();
        if (!v) throw new Error('--skiffd-cpu-prof needs a directory');
        a.skiffdCpuProf = resolve(v);
        break;
      }
      case '--skiffd-node-flag': {
        const v = value();
        if (!v?.startsWith('--')) throw new Error('--skiffd-node-flag needs a node flag (--...)');
        a.skiffdNodeFlags.push(v);
        break;
      }
      case '--keep':
        a.keep = true;
        break;
      case '--handler-times':
        a.handlerTimes = true;
        break;
      default:
        throw new Error(`unknown argument ${JSON.stringify(argv[i])} (see --help)`);
    }
  }
  return a;
}
