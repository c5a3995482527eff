// SIGKILL to a whole process group (a helper that setsid()s, and whatever it runs); to the process
// alone when it leads no group.
export function killGroup(pid: number): void {
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* already gone */
    }
  }
}
