#!/usr/bin/env node
// Builds each target separately: `node build.mjs [edge|server|image|lib|skiffd|all]` (default all).
// The per-target recipes live in scripts/build-*.mjs so each product owns its own.
const targets = {
  edge: () => import('./scripts/build-edge.mjs'),
  server: () => import('./scripts/build-server.mjs'),
  image: () => import('./scripts/build-image.mjs'),
  lib: () => import('./scripts/build-lib.mjs'),
  skiffd: () => import('./scripts/build-skiffd.mjs'),
};

const wanted = process.argv[2] ?? 'all';
if (wanted === '--help' || wanted === '-h') {
  console.log(
    'usage: node build.mjs [edge|server|image|lib|skiffd|all]\n  edge    dist/edge/* bundles for Deno, workerd and Vercel edge\n  server  dist/server.mjs, the Node server with everything bundled\n  image   dist/image/, an OCI image layout of that server (after server), no container daemon needed\n  lib     dist/lib, src/ as ES modules with .d.ts (the package entry; npm pack runs it)\n  skiffd  dist/skiffd.cjs and the single executable dist/skiffd',
  );
  process.exit(0);
}
const names = wanted === 'all' ? Object.keys(targets) : [wanted];
for (const name of names) {
  if (!targets[name]) {
    console.error(`unknown build target "${name}"; expected one of: ${Object.keys(targets).join(', ')}, all`);
    process.exit(2);
  }
  const started = Date.now();
  const mod = await targets[name]();
  await mod.build();
  console.log(`built ${name} in ${Date.now() - started} ms`);
}
