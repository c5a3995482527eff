export async function build() {
  throw new Error('edge build not written yet (issue 2)');
}
