// A ustar (POSIX tar) archive of text files, for the Markdown export: `tar -x` on any system turns
// the answer into the files, without a JSON step. Regular files only, mode 0644, one mtime.
const BLOCK = 512;
const encoder = new TextEncoder();

function field(header: Uint8Array, offset: number, length: number, value: string): void {
  const bytes = encoder.encode(value);
  if (bytes.length > length) throw new Error(`tar header field too long: ${value}`);
  header.set(bytes, offset);
}

/** Octal, zero-padded to length - 1 digits, NUL-terminated (the ustar numeric field format). */
function octal(value: number, length: number): string {
  return `${value.toString(8).padStart(length - 1, "0")}\0`;
}

/** ustar keeps 100 bytes of name and 155 of prefix: a longer path is split at a '/'. */
function splitPath(path: string): { name: string; prefix: string } {
  if (encoder.encode(path).length <= 100) return { name: path, prefix: "" };
  const cut = path.lastIndexOf("/", path.length - 1);
  const name = path.slice(cut + 1);
  const prefix = path.slice(0, cut);
  if (cut < 0 || encoder.encode(name).length > 100 || encoder.encode(prefix).length > 155) {
    throw new Error(`path too long for tar: ${path}`);
  }
  return { name, prefix };
}

export function tarArchive(files: readonly { path: string; content: string }[], mtime: Date): Uint8Array<ArrayBuffer> {
  const parts: Uint8Array[] = [];
  const seconds = Math.floor(mtime.getTime() / 1000);
  for (const f of files) {
    const body = encoder.encode(f.content);
    const header = new Uint8Array(BLOCK);
    const { name, prefix } = splitPath(f.path);
    field(header, 0, 100, name);
    field(header, 100, 8, octal(0o644, 8));
    field(header, 108, 8, octal(0, 8));
    field(header, 116, 8, octal(0, 8));
    field(header, 124, 12, octal(body.length, 12));
    field(header, 136, 12, octal(seconds, 12));
    field(header, 148, 8, "        "); // the checksum counts its own field as spaces
    field(header, 156, 1, "0");
    field(header, 257, 6, "ustar\0");
    field(header, 263, 2, "00");
    field(header, 345, 155, prefix);
    const sum = header.reduce((s, b) => s + b, 0);
    field(header, 148, 8, `${sum.toString(8).padStart(6, "0")}\0 `);
    parts.push(header, body, new Uint8Array((BLOCK - (body.length % BLOCK)) % BLOCK));
  }
  parts.push(new Uint8Array(BLOCK * 2)); // end of archive
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let offset = 0;
  for (const p of parts) {
    out.set(p, offset);
    offset += p.length;
  }
  return out;
}
