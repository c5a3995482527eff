/** Compiles src/ to ES modules and .d.ts under dist/lib (the package's library entry). */
export function build(options?: { quiet?: boolean }): Promise<{ outdir: string }>;
