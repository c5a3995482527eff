// `npm run bench:cri -- --kubelet`: the kubelet part. For each pod count, skiffd then containerd, each
// started fresh (own state, socket, CNI network) and measured by kubelet-node.ts, then torn down.
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { kitMissing } from '../../test/support/cri-conformance.ts';
import { startKitMirrors, startNodePeer } from './node-peers.ts';
import { kubeBin } from '../../test/support/kubelet-host.ts';
import type { BenchArgs } from './args.ts';
import { CONTAINERD_INSTALL_HINT, CONTAINERD2_HINT, containerdBinary } from './containerd-peer.ts';
import { measureNode, type NodeCostResult } from './kubelet-node.ts';
import { formatNodeCost } from './kubelet-report.ts';
import { CONTAINERD_RELEASE, type Peer, type PeerName } from './peer.ts';

type Undo = { what: string; fn: () => Promise<void> };

export async function runKubeletPart(
  args: BenchArgs,
  dir: string,
  undo: Undo[],
  say: (line: string) => void,
  stopping: () => boolean,
): Promise<{ results: NodeCostResult[]; text: string }> {
  const missing = kitMissing() ?? (existsSync(kubeBin) ? undefined : `the kit's Kubernetes binary is missing (${kubeBin})`);
  if (missing) throw new Error(missing);
  // Beside containerd 2.1 (--only containerd runs 1.6 alone).
  const wanted: PeerName[] = args.only ? [args.only] : ['skiffd', 'containerd2'];
  for (const name of wanted) {
    const release = CONTAINERD_RELEASE[name];
    if (release && !containerdBinary(release))
      throw new Error(`containerd ${release} is not available (${release === '1.6' ? CONTAINERD_INSTALL_HINT : CONTAINERD2_HINT})`);
  }

  say("starting the conformance kit's registry (the kubelet's images)");
  const kit = await startKitMirrors(undo);

  const results: NodeCostResult[] = [];
  for (const pods of args.kubeletPods) {
    for (const name of wanted) {
      if (stopping()) break;
      const peerDir = join(dir, `${name}-${pods}`);
      mkdirSync(peerDir, { recursive: true });
      say(`kubelet, ${pods} pods: starting ${name}`);
      let peer: Peer | undefined;
      try {
        peer = await startNodePeer(name, peerDir, kit, args);
        const step = { what: `tearing down ${name}`, fn: () => peer!.teardown() };
        undo.push(step);
        const r = await measureNode(
          peer,
          { pods, steadyS: args.steadyS, settleS: args.settleS, readyTimeoutS: Math.max(180, pods * 4) },
          join(peerDir, 'node'),
          say,
        );
        results.push(r);
        const c = r.cpu;
        const m = r.pss;
        say(
          `  ${name}, ${pods} pods: Ready ${r.readyS?.toFixed(1) ?? '-'} s; CPU daemon ${c?.daemon.toFixed(1) ?? '-'} %, helpers ${c?.helpers.toFixed(1) ?? '-'} %, ` +
            `kubelet ${c?.kubelet.toFixed(1) ?? '-'} %; PSS daemon ${m ? (m.daemon / 1024).toFixed(0) : '-'} MB, helpers ${m ? (m.helpers / 1024).toFixed(0) : '-'} MB` +
            (r.errors.length ? `; errors: ${r.errors.join('; ')}` : ''),
        );
        await peer.teardown();
        undo.splice(undo.indexOf(step), 1);
      } catch (err) {
        say(`  ${name} failed: ${(err as Error).message}`);
        results.push({ runtime: name, description: peer?.description ?? 'did not start', pods, windowS: 0, loadAverage: '', errors: [(err as Error).message] });
        await peer?.teardown().catch(() => {});
      }
    }
  }
  return { results, text: formatNodeCost(results) };
}
