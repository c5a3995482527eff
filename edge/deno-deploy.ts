// Deno Deploy: its entrypoint runs as `deno run` would run it, so this one starts the server itself
// (edge/deno.ts is for `deno serve`, which serves a default `{ fetch }` export). PORT, when set,
// picks the port (0: any free one); otherwise Deno.serve's default.
import app from './deno.ts';

// The Deno API used here, declared so tsc (with Node's types) checks this file too.
declare const Deno: {
  env: { get(name: string): string | undefined };
  serve(options: { port?: number; hostname?: string }, handler: (request: Request) => Response | Promise<Response>): unknown;
};

const port = Deno.env.get('PORT');
Deno.serve(port === undefined ? {} : { port: Number(port), hostname: Deno.env.get('HOST') }, app.fetch);
