#!/usr/bin/env node
// Regenerates proto/gen/runtime/v1/api.ts from proto/runtime/v1/api.proto with buf + ts-proto
// (both from node_modules; no network). `--check` generates into a temp dir instead and exits 1
// when the committed output differs, so a test can prove the committed code is current.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const protoDir = join(root, 'proto');
const buf = join(root, 'node_modules', '.bin', 'buf');
const generated = join('gen', 'runtime', 'v1', 'api.ts');

function generate(outBase) {
  const args = ['generate', '--template', 'buf.gen.yaml'];
  if (outBase) args.push('--output', outBase);
  execFileSync(buf, args, { cwd: protoDir, stdio: ['ignore', 'inherit', 'inherit'] });
}

if (process.argv.includes('--check')) {
  const tmp = mkdtempSync(join(tmpdir(), 'skiff-gen-proto-'));
  try {
    generate(tmp);
    const fresh = readFileSync(join(tmp, generated), 'utf8');
    const committed = readFileSync(join(protoDir, generated), 'utf8');
    if (fresh !== committed) {
      console.error(`proto/${generated} is stale: run \`npm run gen:proto\` and commit the result`);
      process.exit(1);
    }
    console.log(`proto/${generated} is up to date`);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
} else {
  generate();
  console.log(`wrote proto/${generated}`);
}
