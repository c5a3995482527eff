/** The port the server in the image listens on (its PORT). */
export const IMAGE_PORT: number;
/** Builds dist/image/ (or `outdir`): an OCI image layout of the Node server in `server` (default dist/server.mjs). */
export function build(options?: {
  outdir?: string;
  server?: string;
  node?: string;
  tag?: string;
  quiet?: boolean;
}): Promise<{ dir: string; tag: string; manifestDigest: string; layerBytes: number }>;
