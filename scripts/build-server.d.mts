/** Builds dist/server.mjs (or `outfile`): the Node server with every dependency and GraphiQL's assets inside. */
export function build(options?: { outfile?: string; quiet?: boolean }): Promise<{ file: string; bytes: number }>;
