#!/usr/bin/env node
// npm test: the host suite (test/cri, test/graphql) and the guest suite (test/guest: skiffd on Debian
// nodes that QEMU emulates) run side by side, each in its own node --test run, since a guest spends most
// of its time waiting on an emulated CPU. The host suite prints as it goes; the guest suite's output is
// kept and printed once the host suite is done. The host suite's failures are printed again at the very
// end, so whoever reads only the tail of a run sees why it failed. Extra arguments go to both runs.
//
//   node scripts/run-tests.mjs [NODE_TEST_ARGS...]
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const extra = process.argv.slice(2);
if (extra.includes('--help')) {
  console.log(
    'usage: node scripts/run-tests.mjs [NODE_TEST_ARGS...]\nRuns test/cri and test/graphql, and beside them test/guest; exits non-zero if either fails.',
  );
  process.exit(0);
}
const base = ['--import', 'tsx', '--test', '--test-reporter=spec', ...extra];

/** Runs one suite; `live` streams its output, else it is kept for later. */
function suite(name, patterns, live) {
  const child = spawn(process.execPath, [...base, ...patterns], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const take = (stream) => (d) => {
    const text = d.toString();
    if (live) stream.write(text);
    output += text;
  };
  child.stdout.on('data', take(process.stdout));
  child.stderr.on('data', take(process.stderr));
  const done = new Promise((resolve) => child.on('close', (code, signal) => resolve({ name, code, signal, output: () => output })));
  return { child, done };
}

const host = suite('host', ['test/cri/*.test.ts', 'test/graphql/*.test.ts'], true);
const guest = suite('guest', ['test/guest/*.test.ts'], false);
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => {
    host.child.kill(sig);
    guest.child.kill(sig);
  });
}

const hostResult = await host.done;
const guestResult = await guest.done;
process.stdout.write(`\n=== the guest suite (test/guest), run beside the host suite ===\n${guestResult.output()}`);

// node's spec reporter closes a run with its counts, then a "failing tests" section with each failure's error.
const FAILING = '✖ failing tests:';
const hostFailures = hostResult.output().lastIndexOf(FAILING);
if (hostFailures >= 0) {
  const section = hostResult.output().slice(hostFailures);
  const shown =
    section.length > 20_000 ? `${section.slice(0, 20_000)}\n[${section.length - 20_000} more characters: the host suite's output above has them all]` : section;
  process.stdout.write(`\n=== the host suite's failures again ===\n${shown}\n`);
}

/** The last "ℹ pass N" lines of a suite's output are its run's own (the guest suite prints each node's before them). */
const count = (output, what) => Number([...output.matchAll(new RegExp(`^ℹ ${what} (\\d+)$`, 'gm'))].at(-1)?.[1] ?? 0);
const total = (what) => count(hostResult.output(), what) + count(guestResult.output(), what);
const failed = total('fail') + total('cancelled');
console.log(`\ntests: ${total('pass')} passed, ${failed} failed, ${total('skipped')} skipped`);
const bad = [hostResult, guestResult].filter((r) => r.code !== 0);
for (const r of bad) console.error(`the ${r.name} suite failed (${r.signal ? `signal ${r.signal}` : `exit code ${r.code}`})`);
process.exit(bad.length > 0 ? 1 : 0);
