// A child process whose output tests wait on by content, not by time: waitFor(text) resolves
// when the text appears in stdout or stderr, and rejects when the process exits first.
export interface Watched {
  child: Deno.ChildProcess;
  output(): string;
  waitFor(text: string | RegExp): Promise<void>;
  /** Resolves with the exit status once the process ended and its output was read. */
  exited: Promise<Deno.CommandStatus>;
}

export function spawnWatched(
  command: string,
  args: string[],
  opts: { cwd?: string; env: Record<string, string> },
): Watched {
  const child = new Deno.Command(command, {
    args,
    cwd: opts.cwd,
    clearEnv: true,
    env: opts.env,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let text = "";
  let ended: Deno.CommandStatus | undefined;
  const waiters: { match: string | RegExp; resolve: () => void; reject: (e: Error) => void }[] = [];
  const check = () => {
    for (const w of [...waiters]) {
      if (typeof w.match === "string" ? text.includes(w.match) : w.match.test(text)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve();
      }
    }
  };
  const decoder = new TextDecoder();
  const pump = async (stream: ReadableStream<Uint8Array>) => {
    for await (const chunk of stream) {
      text += decoder.decode(chunk, { stream: true });
      check();
    }
  };
  const pumped = Promise.all([pump(child.stdout), pump(child.stderr)]);
  const exited = pumped.then(() => child.status).then((status) => {
    ended = status;
    for (const w of waiters.splice(0)) {
      w.reject(new Error(`the process exited (${status.code}) before printing ${w.match}:\n${text}`));
    }
    return status;
  });
  return {
    child,
    output: () => text,
    waitFor(match) {
      return new Promise<void>((resolve, reject) => {
        waiters.push({ match, resolve, reject });
        check();
        if (ended && waiters.some((w) => w.resolve === resolve)) {
          waiters.splice(waiters.findIndex((w) => w.resolve === resolve), 1);
          reject(new Error(`the process exited (${ended.code}) without printing ${match}:\n${text}`));
        }
      });
    },
    exited,
  };
}

/** The environment a child server gets: nothing from the developer's shell but what it needs. */
export function cleanEnv(extra: Record<string, string>): Record<string, string> {
  return {
    PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
    HOME: Deno.env.get("HOME") ?? "/root",
    ...(Deno.env.get("DENO_DIR") ? { DENO_DIR: Deno.env.get("DENO_DIR")! } : {}),
    NO_COLOR: "1",
    ...extra,
  };
}
