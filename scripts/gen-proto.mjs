#!/usr/bin/env node
// Regenerates the TypeScript in proto/gen/ with buf + ts-proto (both from node_modules; no network):
// the CRI (proto/runtime/v1/api.proto, with nice-grpc services) and NRI with ttrpc's envelope
// (proto/nri/, proto/ttrpc/, messages only). `--check` generates into a temp dir instead and exits 1
// when the committed output differs, so a test can prove the committed code is current.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const protoDir = join(root, 'proto');
const buf = join(root, 'node_modules', '.bin', 'buf');
const runs = [
  { template: 'buf.gen.yaml', paths: ['runtime'], outputs: [join('gen', 'runtime', 'v1', 'api.ts')] },
  {
    template: 'buf.gen.nri.yaml',
    paths: ['nri', 'ttrpc'],
    outputs: [join('gen', 'nri', 'v1alpha1', 'api.ts'), join('gen', 'ttrpc', 'request.ts')],
  },
];

function generate(outBase) {
  for (const run of runs) {
    const args = ['generate', '--template', run.template, ...run.paths.flatMap((p) => ['--path', p])];
    if (outBase) args.push('--output', outBase);
    execFileSync(buf, args, { cwd: protoDir, stdio: ['ignore', 'inherit', 'inherit'] });
  }
}

const outputs = runs.flatMap((r) => r.outputs);
if (process.argv.includes('--check')) {
  const tmp = mkdtempSync(join(tmpdir(), 'skiff-gen-proto-'));
  try {
    generate(tmp);
    for (const generated of outputs) {
      const fresh = readFileSync(join(tmp, generated), 'utf8');
      const committed = readFileSync(join(protoDir, generated), 'utf8');
      if (fresh !== committed) {
        console.error(`proto/${generated} is stale: run \`npm run gen:proto\` and commit the result`);
        process.exit(1);
      }
    }
    console.log(`${outputs.map((o) => `proto/${o}`).join(', ')} are up to date`);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
} else {
  generate();
  console.log(`wrote ${outputs.map((o) => `proto/${o}`).join(', ')}`);
}
