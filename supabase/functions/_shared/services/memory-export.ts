// The export: the tenant's memories, soft-deleted ones included and flagged (not its entities,
// proposals, contradictions, sessions or checkpoints: README). json: its memories (no
// embeddings), relations and history; markdown: one file per memory
// (export-markdown.ts), as a JSON object or, asked for with Accept: application/x-tar, a tar
// archive. Streamed: read EXPORT_PAGE_ROWS rows at a time (keyset on each table's order) and written
// as the client takes them, so a tenant of any size is exported in bounded memory. (It was read
// whole and serialised whole: 16 MB for 3,600 memories; ten at once took 570 MB.)
//
// Every page of an export, of every format, is read in one transaction as the tenant, one snapshot
// (db-snapshot.ts), on the primary: the export shows one instant, whatever is written while it
// runs. That transaction holds a connection of the pool until the export ends (a replica would
// cancel it when it conflicts with replay, and its reads are cut at 35 s: docs/operations.md#read-replicas).
// With a pool of one connection (the embedded server's, DB_POOL_MAX=1), or on PGlite (one
// transaction at a time), that would stop every other request while the client reads, so there
// each page is a short transaction of its own, as the tenant (on the read replica when there is
// one): a write made meanwhile may show in a later page (db-snapshot.ts holdsSnapshots).
// The JSON counts come last, counted as the rows went by. An error before the first page is an
// HTTP error like any other; after it, the stream is aborted and the client sees a truncated body
// (an archive's ends with a file and a damaged block that say so: tar.ts).
import { type TenantContext, type Tx, withTenant } from "../db.ts";
import { holdsSnapshots, inOneSnapshot } from "../db-snapshot.ts";
import { isoDates, memoryColumns } from "../memories/memory-row.ts";
import { toMemory } from "../memories/record.ts";
import { MarkdownPaths, memoryToMarkdown } from "../memories/export-markdown.ts";
import { inIndexOrder } from "../memories/list-page.ts";
import type { ExportQuery, MarkdownFile } from "../memories/schemas.ts";
import { tarEnd, tarEntry, tarIncomplete } from "../memories/tar.ts";
import { readPoolOf, type ServiceDeps } from "./deps.ts";

/** Rows read per page (and written per chunk). */
export const EXPORT_PAGE_ROWS = 500;

type Row = Record<string, unknown>;
/** Where the next page starts: the last row's sort key (its timestamp as text, exact to the µs). */
interface Key {
  at: string;
  id: string;
}
type Table = "memories" | "relations" | "history";

/** Before every row: where the first page starts. */
const START: Key = { at: "-infinity", id: "00000000-0000-0000-0000-000000000000" };

/**
 * One page of a table in its export order, after `after`. The key's timestamp is bound as text:
 * bound as a timestamp, postgres.js would pass it through a JS Date and drop the microseconds that
 * order rows of the same millisecond (as list-page.ts).
 */
function pageQuery(tx: Tx, table: Table, after: Key) {
  switch (table) {
    case "memories":
      return tx`
        select ${memoryColumns(tx, "m")}, m.created_at::text as key_at
          from public.devai_memories m
         where (m.created_at, m.id) > (${after.at}::text::timestamptz, ${after.id}::uuid)
         order by m.created_at, m.id limit ${EXPORT_PAGE_ROWS}`;
    case "relations":
      return tx`
        select id, from_id, to_id, relation_type, strength, confidence, evidence, valid_from, valid_until,
               created_at, created_at::text as key_at
          from public.memory_relations
         where (created_at, id) > (${after.at}::text::timestamptz, ${after.id}::uuid)
         order by created_at, id limit ${EXPORT_PAGE_ROWS}`;
    case "history":
      return tx`
        select id, memory_id, event, old_ref, new_ref, actor, old_content, new_content, meta, ts, ts::text as key_at
          from public.memory_history
         where (ts, id) > (${after.at}::text::timestamptz, ${after.id}::uuid)
         order by ts, id limit ${EXPORT_PAGE_ROWS}`;
  }
}

/** Runs one page's statements: in the export's one snapshot, or in a transaction of the page's own. */
type PageReader = <T>(page: (tx: Tx) => Promise<T>) => Promise<T>;

/** Every row of a table, a page at a time, in export order (without the key column). */
async function* rowsOf(read: PageReader, table: Table): AsyncGenerator<Row[]> {
  let after = START;
  for (;;) {
    // In the order of the tenant's index, never a sort of all its rows per page.
    const [, rows] = await read((tx) => Promise.all([inIndexOrder(tx), pageQuery(tx, table, after)]));
    if (rows.length === 0) return;
    after = { at: rows.at(-1)!.key_at as string, id: rows.at(-1)!.id as string };
    yield rows.map(({ key_at: _, ...row }) => row);
    if (rows.length < EXPORT_PAGE_ROWS) return;
  }
}

/** A JSON array's items, a page at a time: its first chunk opens it after `before`, its last closes it. */
async function* arrayChunks<T>(pages: AsyncIterable<T[]>, before: string): AsyncGenerator<string> {
  let open = `${before}[`;
  for await (const items of pages) {
    yield open + items.map((item) => JSON.stringify(item)).join(",");
    open = ",";
  }
  yield open === "," ? "]" : `${open}]`;
}

/** `head` as a JSON object left open (its closing brace dropped), for the streamed fields that follow. */
function openObject(head: Row): string {
  return JSON.stringify(head).slice(0, -1);
}

/**
 * The JSON export: the object the whole-read export answered, the counts last. Its first chunk
 * already holds the first page (or the end of an empty list).
 */
async function* jsonChunks(read: PageReader, head: Row): AsyncGenerator<string> {
  const counts = { memories: 0, soft_deleted: 0, relations: 0, history: 0 };
  let before = openObject({ ...head, format: "json" });
  for (const table of ["memories", "relations", "history"] as const) {
    const pages = (async function* () {
      for await (const rows of rowsOf(read, table)) {
        counts[table] += rows.length;
        yield rows.map((row) => {
          if (table !== "memories") return isoDates(row);
          const m = toMemory(row);
          if (m.state === "soft_deleted") counts.soft_deleted++;
          return { ...m, soft_deleted: m.state === "soft_deleted" };
        });
      }
    })();
    for await (const chunk of arrayChunks(pages, `${before},${JSON.stringify(table)}:`)) {
      yield chunk;
      before = "";
    }
  }
  yield `,"counts":${JSON.stringify(counts)}}`;
}

/** The Markdown files in creation order, a page at a time (paths unique across pages). */
async function* markdownFiles(read: PageReader): AsyncGenerator<MarkdownFile[]> {
  const paths = new MarkdownPaths();
  for await (const rows of rowsOf(read, "memories")) {
    yield rows.map((row) => {
      const m = toMemory(row);
      return { path: paths.pathFor(m), content: memoryToMarkdown(m) };
    });
  }
}

async function* markdownJsonChunks(read: PageReader, head: Row): AsyncGenerator<string> {
  yield* arrayChunks(markdownFiles(read), `${openObject({ ...head, format: "markdown" })},"files":`);
  yield "}";
}

async function* tarChunks(read: PageReader, mtime: Date): AsyncGenerator<Uint8Array> {
  for await (const files of markdownFiles(read)) {
    for (const f of files) yield tarEntry(f, mtime);
  }
  yield tarEnd();
}

const encoder = new TextEncoder();

/**
 * The export as a streamed response. Its first chunk (which holds the first page) is read before
 * the response is made, so what fails at the start (rate limit, database) is answered with its own
 * status.
 */
export async function exportResponse(
  deps: ServiceDeps,
  tenant: TenantContext,
  q: ExportQuery,
  wantsTar: boolean,
): Promise<Response> {
  const exportedAt = deps.clock();
  const head = { tenant_id: tenant.tenantId, exported_at: exportedAt.toISOString() };
  const tar = q.format === "markdown" && wantsTar;
  const chunksOf = (read: PageReader): AsyncGenerator<string | Uint8Array> =>
    tar
      ? tarChunks(read, exportedAt)
      : q.format === "markdown"
      ? markdownJsonChunks(read, head)
      : jsonChunks(read, head);
  const chunks = await holdsSnapshots(deps.sql)
    ? inOneSnapshot(deps.sql, tenant, (tx) => chunksOf((page) => page(tx)))
    : chunksOf((page) => withTenant(readPoolOf(deps), tenant, page));
  let first: string | Uint8Array | undefined = (await chunks.next()).value ?? undefined;
  // An archive's chunks are its files, one each (then its end).
  let sent = 0;
  let failure: { err: unknown } | undefined;
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (failure) return controller.error(failure.err);
      try {
        const value = first ?? (await chunks.next()).value;
        first = undefined;
        if (value === undefined) return controller.close();
        controller.enqueue(typeof value === "string" ? encoder.encode(value) : value);
        sent++;
      } catch (err) {
        // The status is sent: the client sees the body end early. Logged, so it is not silent here.
        console.error(
          JSON.stringify({ level: "error", msg: "export aborted after its first page", error: String(err) }),
        );
        // A truncated JSON document fails to parse; an archive cut between two files reads as whole,
        // so it gets an end that says it is not (tar.ts), sent before the error (which drops what is queued).
        if (!tar) return controller.error(err);
        failure = { err };
        controller.enqueue(tarIncomplete(sent, exportedAt));
      }
    },
    async cancel() {
      await chunks.return(undefined);
    },
  });
  return new Response(body, {
    headers: tar
      ? {
        "content-type": "application/x-tar",
        "content-disposition": `attachment; filename="devai-memories-${head.exported_at.slice(0, 10)}.tar"`,
      }
      : { "content-type": "application/json; charset=utf-8" },
  });
}
