// Machine description and results files.
import { fileURLToPath } from "node:url";

export const RESULTS_DIR = fileURLToPath(new URL("./results/", import.meta.url));

export interface Machine {
  cpuModel: string;
  cores: number;
  memoryGb: number;
  os: string;
  loadAverageAtStart: number[];
  hostname: string;
}

export async function machineInfo(): Promise<Machine> {
  let cpuModel = "unknown";
  try {
    const cpu = await Deno.readTextFile("/proc/cpuinfo");
    cpuModel = /model name\s*:\s*(.+)/.exec(cpu)?.[1]?.trim() ?? cpuModel;
  } catch { /* not Linux */ }
  const mem = Deno.systemMemoryInfo();
  return {
    cpuModel,
    cores: navigator.hardwareConcurrency,
    memoryGb: Math.round((mem.total / 1024 ** 3) * 10) / 10,
    os: `${Deno.build.os} ${Deno.osRelease()}`,
    loadAverageAtStart: Deno.loadavg(),
    hostname: Deno.hostname(),
  };
}

export async function writeResult(suite: string, data: unknown): Promise<string> {
  await Deno.mkdir(RESULTS_DIR, { recursive: true });
  const file = `${RESULTS_DIR}${suite}.json`;
  await Deno.writeTextFile(file, JSON.stringify(data, null, 2) + "\n");
  // Keep one file per size too, so the charts can plot latency against corpus size.
  const size = (data as { size?: string }).size;
  if (size) await Deno.writeTextFile(`${RESULTS_DIR}${suite}-${size}.json`, JSON.stringify(data, null, 2) + "\n");
  return file;
}

export async function readResults(): Promise<{ name: string; data: Record<string, unknown> }[]> {
  const out: { name: string; data: Record<string, unknown> }[] = [];
  try {
    for await (const e of Deno.readDir(RESULTS_DIR)) {
      if (!e.isFile || !e.name.endsWith(".json")) continue;
      try {
        out.push({ name: e.name, data: JSON.parse(await Deno.readTextFile(RESULTS_DIR + e.name)) });
      } catch { /* ignore a broken file */ }
    }
  } catch { /* no results yet */ }
  return out.sort((a, b) => a.name.localeCompare(b.name));
}
