// The CRI reports an image's default user as a uid or a name, from the config's `User`
// (`1000`, `app`, `1000:1000`, `app:staff`); the group part plays no role here.
export function imageUser(user: string | undefined): { uid?: number; username?: string } {
  if (!user) return {};
  const name = user.split(':')[0];
  if (name === '') return {};
  if (/^\d+$/.test(name)) return { uid: Number(name) };
  return { username: name };
}
