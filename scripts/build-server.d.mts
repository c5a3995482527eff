/** Builds dist/server.mjs (or `outfile`): the Node server with every dependency and GraphiQL's assets inside. */
export function build(options?: { outfile?: string; quiet?: boolean }): Promise<{ file: string; bytes: number }>;
/** Node flags the server runs with (`npm start`, the image); `node dist/server.mjs` should get them too. */
export const SERVER_NODE_FLAGS: readonly string[];
