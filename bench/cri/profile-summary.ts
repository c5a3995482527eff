// Summarises a V8 CPU profile (node --cpu-prof): self time per function and the heaviest call paths,
// optionally cut to a time window on CLOCK_MONOTONIC in µs (the bench's --json gives its steady window).
//   tsx bench/cri/profile-summary.ts FILE.cpuprofile [START_US END_US] [--top N]
import { readFileSync } from 'node:fs';

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: Node[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

const argv = process.argv.slice(2);
const topAt = argv.indexOf('--top');
const top = topAt >= 0 ? Number(argv.splice(topAt, 2)[1]) : 25;
const [file, from, to] = argv;
if (!file) {
  process.stderr.write('usage: tsx bench/cri/profile-summary.ts FILE.cpuprofile [START_US END_US] [--top N]\n');
  process.exit(2);
}
const p = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const byId = new Map(p.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const start = from ? Number(from) : -Infinity;
const end = to ? Number(to) : Infinity;

const label = (n: Node) => {
  const f = n.callFrame;
  const where = f.url ? `${f.url.replace(/^.*\//, '')}:${f.lineNumber + 1}` : '';
  return `${f.functionName || '(anonymous)'}${where ? ` ${where}` : ''}`;
};

const self = new Map<string, number>();
const paths = new Map<string, number>();
const inclusive = new Map<string, number>();
let t = p.startTime;
let total = 0;
let idle = 0;
for (let i = 0; i < p.samples.length; i++) {
  t += p.timeDeltas[i] ?? 0;
  if (t < start || t > end) continue;
  const dt = p.timeDeltas[i + 1] ?? 0;
  const node = byId.get(p.samples[i])!;
  const name = label(node);
  if (node.callFrame.functionName === '(idle)') {
    idle += dt;
    continue;
  }
  total += dt;
  self.set(name, (self.get(name) ?? 0) + dt);
  const stack: string[] = [];
  const seen = new Set<string>();
  for (let id: number | undefined = node.id; id !== undefined; id = parent.get(id)) {
    const l = label(byId.get(id)!);
    if (l.startsWith('(root)')) break;
    stack.push(l);
    if (!seen.has(l)) inclusive.set(l, (inclusive.get(l) ?? 0) + dt);
    seen.add(l);
  }
  const key = stack.slice(0, 6).reverse().join(' > ');
  paths.set(key, (paths.get(key) ?? 0) + dt);
}
const ms = (us: number) => `${(us / 1000).toFixed(0)} ms`;
const share = (us: number) => `${((100 * us) / total).toFixed(1)} %`;
const print = (title: string, m: Map<string, number>, n: number) => {
  process.stdout.write(`\n${title}\n`);
  for (const [k, v] of [...m].sort((a, b) => b[1] - a[1]).slice(0, n)) process.stdout.write(`${ms(v).padStart(9)} ${share(v).padStart(7)}  ${k}\n`);
};
process.stdout.write(`busy ${ms(total)}, idle ${ms(idle)} in the window\n`);
print('self time', self, top);
print('inclusive time', inclusive, top);
print('heaviest paths (innermost 6 frames)', paths, top);
