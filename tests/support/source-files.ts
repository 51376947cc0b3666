// The source files tests read as text (layout and SQL conventions checked on the code itself).

/** Every .ts file under a folder, at any depth. */
export async function tsFiles(dir: URL): Promise<URL[]> {
  const out: URL[] = [];
  for await (const entry of Deno.readDir(dir)) {
    const url = new URL(entry.name + (entry.isDirectory ? "/" : ""), dir);
    if (entry.isDirectory) out.push(...await tsFiles(url));
    else if (entry.name.endsWith(".ts")) out.push(url);
  }
  return out;
}
