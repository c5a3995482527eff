// The real `oras` CLI (Debian unstable's build, fetched into a cache by scripts/fetch-oras.sh, which
// leaves the system's apt sources alone) to push OCI artifacts to a test registry.
import { join } from 'node:path';
import { runCommand } from './commands.ts';
import { repoRoot } from './skiffd.ts';

/** The oras binary, or why there is none (no network to the Debian mirror, not root, ...). */
export async function fetchOras(): Promise<{ bin: string } | { missing: string }> {
  const r = await runCommand('bash', [join(repoRoot, 'scripts', 'fetch-oras.sh')], { timeoutMs: 300_000 }).catch((err: Error) => ({
    code: -1,
    stdout: '',
    stderr: err.message,
  }));
  const bin = r.stdout.trim().split('\n').pop() ?? '';
  if (r.code !== 0 || !bin) return { missing: `oras is unavailable (scripts/fetch-oras.sh failed: ${r.stderr.trim().slice(-500)})` };
  return { bin };
}

/** Runs oras in `cwd`; a failure throws with its output. */
export async function oras(bin: string, args: string[], cwd: string): Promise<string> {
  const r = await runCommand('sh', ['-c', 'cd "$0" && exec "$@"', cwd, bin, ...args], { timeoutMs: 60_000 });
  if (r.code !== 0) throw new Error(`oras ${args.join(' ')} failed (${r.code}): ${r.stderr || r.stdout}`);
  return r.stdout;
}
