// `node --import ./bench/graphql/graphql16-hooks.mjs ...`: every `graphql` import and require in the
// process (ours, the schema's, the library's) resolves to the graphql 16 install (the `graphql-16`
// alias in package.json), for the peers that run on graphql 16 only: Mercurius and graphql-jit use
// graphql-js 16 internals (buildExecutionContext) that 17 removed.
import { registerHooks } from 'node:module';

registerHooks({
  resolve(specifier, context, nextResolve) {
    if (specifier === 'graphql' || specifier.startsWith('graphql/')) return nextResolve(`graphql-16${specifier.slice('graphql'.length)}`, context);
    return nextResolve(specifier, context);
  },
});
