// One cold-start sample in workerd itself: a new `workerd serve` process with the bundle's modules,
// timed from its spawn to the body of the first answer.
import { within } from '../../../test/support/graphql-fixtures.ts';
import { spawnWorkerd } from '../../../test/support/workerd-serve.ts';

export async function workerdServeSample(config: string, path: string): Promise<{ ms: number; body: string }> {
  const started = performance.now();
  const served = await spawnWorkerd(config);
  try {
    const body = await within(
      30_000,
      'workerd serve gave no first answer',
      Promise.race([served.exited, fetch(`${served.origin}${path}`).then((res) => res.text())]),
    );
    return { ms: performance.now() - started, body };
  } finally {
    if (served.child.exitCode === null && served.child.signalCode === null) {
      const gone = new Promise((resolve) => served.child.once('exit', resolve));
      served.child.kill('SIGKILL');
      await within(10_000, 'workerd did not exit after SIGKILL', gone);
    }
  }
}
