// How much a request's own work costs the Node server in all at saturation: fixed bytes (the variables
// shape's answer) from our Node server after a busy wait of BUSY_US µs per request; on SIGTERM it prints
// its CPU per request. Load it with autocannon and compare BUSY_US=0 with a few µs:
//   BUSY_US=6 npx tsx bench/graphql/busy-server.ts        # prints READY <port>
//   npx autocannon -c 50 -d 8 -m POST -H content-type=application/json -b '{"query":"{ x }"}' http://127.0.0.1:<port>/graphql
import { startServer } from '../../node/graphql/app.ts';

if (process.argv.includes('--help')) {
  process.stdout.write('usage: BUSY_US=N tsx bench/graphql/busy-server.ts   (prints READY <port>; SIGTERM prints CPU per request)\n');
  process.exit(0);
}
const busyUs = Number(process.env.BUSY_US ?? 0);
if (!Number.isFinite(busyUs) || busyUs < 0) {
  process.stderr.write(`BUSY_US must be a number of microseconds, not ${process.env.BUSY_US}\n`);
  process.exit(2);
}
const body = '{"data":{"country":{"name":"Japan","capital":"Tokyo","emoji":"🇯🇵","languages":[{"name":"Japanese"}]}}}';
let requests = 0;
const handler = async (request: Request) => {
  await request.text();
  const end = performance.now() + busyUs / 1000;
  while (performance.now() < end) {}
  requests++;
  return new Response(body, { status: 200, headers: { 'content-type': 'application/json; charset=utf-8' } });
};
const server = await startServer({ handler, port: 0, hostname: '127.0.0.1' });
process.stdout.write(`READY ${server.port}\n`);
const start = process.cpuUsage();
process.once('SIGTERM', () => {
  const used = process.cpuUsage(start);
  if (requests === 0) {
    process.stdout.write(`busy ${busyUs} µs: no requests served, so no CPU per request\n`);
    process.exit(0);
  }
  const per = (us: number) => (us / requests).toFixed(1);
  process.stdout.write(
    `busy ${busyUs} µs: ${requests} requests, ${per(used.user + used.system)} µs CPU per request (user ${per(used.user)}, system ${per(used.system)})\n`,
  );
  process.exit(0);
});
