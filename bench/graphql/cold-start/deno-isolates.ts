// Run by `deno run`: times fresh isolates (module Workers) of each bundle from creation to the first
// response body, in rotating order, and prints the samples as JSON. Argument: a JSON file
// { samples, path, variants: [{ name, file }] }.
declare const Deno: { args: string[]; readTextFile(path: string): Promise<string> };

interface Plan {
  samples: number;
  path: string;
  variants: { name: string; file: string }[];
}

const plan = JSON.parse(await Deno.readTextFile(Deno.args[0])) as Plan;
const harness = new URL('./deno-isolate-harness.ts', import.meta.url).href;

function oneSample(file: string): Promise<{ ms: number; body: string }> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const worker = new Worker(harness, { type: 'module' });
    const timer = setTimeout(() => {
      worker.terminate();
      reject(new Error(`${file}: no answer within 30 s`));
    }, 30_000);
    worker.onmessage = (event: MessageEvent<{ body?: string; error?: string }>) => {
      const ms = performance.now() - started;
      clearTimeout(timer);
      worker.terminate();
      if (event.data.error !== undefined) reject(new Error(`${file}: ${event.data.error}`));
      else resolve({ ms, body: event.data.body! });
    };
    worker.onerror = (event: ErrorEvent) => {
      clearTimeout(timer);
      worker.terminate();
      reject(new Error(`${file}: ${event.message}`));
    };
    worker.postMessage({ file, path: plan.path });
  });
}

const results: Record<string, number[]> = {};
const bodies: Record<string, string> = {};
for (let i = 0; i < plan.samples; i++) {
  for (let v = 0; v < plan.variants.length; v++) {
    const variant = plan.variants[(v + i) % plan.variants.length];
    const { ms, body } = await oneSample(variant.file);
    (results[variant.name] ??= []).push(ms);
    bodies[variant.name] = body;
  }
}
console.log(JSON.stringify({ results, bodies }));
