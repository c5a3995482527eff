// Running test/guest/inside/node.test.ts on an emulated node and reading what it printed: the Debian 12
// nodes (the kit's vm-v2.sh, this host's files as their root) and the Debian 13 node (trixie-node.sh, a
// root file system of trixie's own packages) boot differently but hand back their console the same way.
import { spawn } from 'node:child_process';

/** A whole guest run (boot, critest, the kubelet) is bounded; so is the test around it. */
export const GUEST_TIMEOUT_MS = 40 * 60_000;
/** What runs on the node. */
export const INSIDE = 'test/guest/inside/node.test.ts';
/**
 * How much the harness stretches its bounds there: the node is 30-40x slower than the host at CPU work,
 * but most of a wait is I/O and sleeping processes, and the suite's own bounds already allow for a slow node.
 */
export const GUEST_TIME_SCALE = 4;
/** What the emulated kernel prints when a CPU has spun in the kernel for over 20 s (its watchdog). */
export const SOFT_LOCKUP = /watchdog: BUG: soft lockup - CPU#\d+ stuck for \d+s! \[[^\]]*\]/;
/**
 * What it prints when it stops on a fault in its own code (an Oops), not on what a suite could cause
 * (out of memory, init killed). Seen once under QEMU 7.2's multi-threaded TCG with trixie's 6.12:
 * `Oops: int3` in the page allocator, a breakpoint left from patching the kernel's code executed after
 * the patch was done (QEMU's translated code, not the kernel, kept it).
 */
export const KERNEL_PANIC = /Kernel panic - not syncing: Fatal exception.*/;

export interface NodeRun {
  status: number | null;
  output: string;
  /**
   * The guest's kernel failed, not the suite: it locked up (and the guest was stopped a minute later,
   * its traces printed) or panicked (and the guest stopped).
   */
  kernelFailed: boolean;
}

/** The command line that runs the inside suite, once `prepare` (shell) has set the node up. */
export function insideCommand(options: { prepare: string[]; env: Record<string, string>; repoRoot: string }): string {
  const env = Object.entries(options.env)
    .map(([k, v]) => `${k}=${v}`)
    .join(' ');
  return [
    ...options.prepare,
    `export ${env}`,
    `cd ${options.repoRoot}`,
    // SKIFF_GUEST_ONLY narrows a run by hand to the tests whose names match it.
    `exec node --import tsx --test --test-concurrency=1 --test-reporter=spec --test-timeout=2400000${process.env.SKIFF_GUEST_ONLY ? ` --test-name-pattern=${JSON.stringify(process.env.SKIFF_GUEST_ONLY)}` : ''} ${INSIDE}`,
  ].join(' && ');
}

/** Starts `script ARGS` (a script that boots a node and runs a command in it) and collects its output. */
export function runOnNode(script: string, args: string[], cwd: string): Promise<NodeRun> {
  return new Promise((resolve) => {
    // The guest takes this environment; node --test inside must not see itself as this run's child.
    const { NODE_TEST_CONTEXT: _child, ...env } = process.env;
    const child = spawn(script, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    let kernelFailed = false;
    const take = (d: Buffer) => {
      output += d.toString();
      if (output.length > 8 << 20) output = output.slice(-(4 << 20));
      if (kernelFailed) return;
      // A panicked guest powers off on its own (panic=-1, -no-reboot), and is stopped if not; a kernel that
      // spins on every CPU does not come back: a minute for its traces, then the guest goes.
      const panicked = KERNEL_PANIC.test(output);
      if (panicked || SOFT_LOCKUP.test(output)) {
        kernelFailed = true;
        setTimeout(() => child.kill('SIGTERM'), panicked ? 30_000 : 60_000);
      }
    };
    child.stdout.on('data', take);
    child.stderr.on('data', take);
    // The scripts stop their guest when they are killed.
    const timer = setTimeout(() => {
      output += `\n(the node was stopped after ${GUEST_TIMEOUT_MS / 60_000} minutes)\n`;
      child.kill('SIGTERM');
    }, GUEST_TIMEOUT_MS);
    let settled = false;
    const settle = (status: number | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve({ status, output, kernelFailed });
    };
    child.on('close', settle);
    // Something it started may hold its output open after it exits: what was read by then is the answer.
    child.on('exit', (status) => setTimeout(() => settle(status), 10_000));
  });
}

/**
 * Runs the node once more if its emulated kernel failed the first time (a lock-up or a panic, said loudly
 * with its first line); a second failure in a row fails the test.
 */
export async function runOnNodeAllowingOneKernelFailure(what: string, run: () => Promise<NodeRun>): Promise<NodeRun> {
  const first = await run();
  if (!first.kernelFailed) return first;
  const lines = first.output.split('\n').filter((l) => SOFT_LOCKUP.test(l) || KERNEL_PANIC.test(l));
  console.warn(`\n*** ${what}'s kernel failed (${lines.length} reports); booting it once more, on single-threaded TCG. First: ${lines[0]} ***\n`);
  console.log(first.output.slice(-30_000));
  // The Oops seen here (int3 left in patched kernel text) comes from QEMU's multi-threaded TCG running a
  // stale translation while the kernel patches its code; one host thread for all vCPUs cannot race so.
  // Slower, so only for the second boot.
  const accel = process.env.VM_ACCEL;
  process.env.VM_ACCEL = 'tcg,thread=single -cpu max';
  let second: NodeRun;
  try {
    second = await run();
  } finally {
    if (accel === undefined) delete process.env.VM_ACCEL;
    else process.env.VM_ACCEL = accel;
  }
  if (second.kernelFailed) throw new Error(`${what}'s kernel failed twice in a row:\n${second.output.slice(-30_000)}`);
  return second;
}

/** The tests node's spec reporter marks skipped ("﹣ NAME (1.2ms) # REASON"). */
export function skippedTests(output: string): string[] {
  return [...output.matchAll(/^\s*﹣ (.+) \([\d.]+m?s\) # .*$/gmu)].map((m) => m[1]);
}

/** The closing counts of node's spec reporter ("ℹ pass N"). */
export function counts(output: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const m of output.matchAll(/^ℹ (tests|pass|fail|skipped|cancelled) (\d+)$/gm)) out[m[1]] = Number(m[2]);
  return out;
}
