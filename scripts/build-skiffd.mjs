export async function build() {
  throw new Error('skiffd build not written yet (issue 3)');
}
