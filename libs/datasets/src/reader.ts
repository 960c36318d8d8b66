/** DuckDB's and the OS's words for a data file that is not there (any more), or a stale handle on a network volume. */
const VANISHED = /no files found that match|cannot open file|no such file|ENOENT|stale file handle|ESTALE/i;

/** Whether a read failed because its data file is gone: replaced by a newer sync and removed under the reader. */
export function isVanishedFileError(err: unknown): boolean {
  // DuckDB's errors come from the native addon's realm: not `instanceof Error` here, but with a message.
  const message = (err as { message?: unknown } | null)?.message;
  return VANISHED.test(typeof message === 'string' ? message : String(err));
}

/**
 * Runs `read` on the file a reader resolved. When that file has gone meanwhile (a newer sync replaced it and it
 * was removed, on this node or another sharing the volume), runs `read` once more on the file current now; a
 * second loss, or a file that did not change, is the caller's error as it was.
 */
export async function readCurrentFile<T>(file: string, current: () => Promise<string | null>, read: (file: string) => Promise<T>): Promise<T> {
  try {
    return await read(file);
  } catch (err) {
    if (!isVanishedFileError(err)) throw err;
    const now = await current().catch(() => null);
    if (!now || now === file) throw err;
    return read(now);
  }
}
