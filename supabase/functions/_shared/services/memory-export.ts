// The export: the tenant's memories, soft-deleted ones included and flagged (not its entities,
// proposals, contradictions, sessions or checkpoints: README). json: its memories (no
// embeddings), relations and history; markdown: one file per memory
// (export-markdown.ts), as a JSON object or, asked for with Accept: application/x-tar, a tar
// archive. Streamed: read EXPORT_PAGE_ROWS rows at a time and written as the client takes them,
// so a tenant of any size is exported in bounded memory. (It was read whole and serialised whole:
// 16 MB for 3,600 memories; ten at once took 570 MB.)
//
// The export shows one instant, whatever is written while it runs, and holds no snapshot while
// the client reads: its rows are copied by one REPEATABLE READ transaction (stageExport, on the
// primary) and its pages read from that copy, each in a short transaction (db-snapshot.ts), on
// every backend and pool size (PGlite and a pool of one connection too: no page holds anything
// between two). Not AS OF the export's instant from memory_history instead: history records no
// reinforcement, no relation re-weighting and nothing a purge deleted (docs/operations.md#exports).
// The JSON counts come last, counted as the rows went by. An error before the first page is an
// HTTP error like any other; after it, the stream is aborted and the client sees a truncated body
// (an archive's ends with a file and a damaged block that say so: tar.ts).
import type { TenantContext, Tx } from "../db.ts";
import { HttpError } from "../http.ts";
import { inStagedSnapshot, type PageReader, SNAPSHOT_RETRY_AFTER_SECONDS, SnapshotEndedError } from "../db-snapshot.ts";
import { isoDates, memoryColumns } from "../memories/memory-row.ts";
import { toMemory } from "../memories/record.ts";
import { MarkdownPaths, memoryToMarkdown } from "../memories/export-markdown.ts";
import type { ExportQuery, MarkdownFile } from "../memories/schemas.ts";
import { tarEnd, tarEntry, tarIncomplete } from "../memories/tar.ts";
import type { ServiceDeps } from "./deps.ts";

/** Rows read per page (and written per chunk). */
export const EXPORT_PAGE_ROWS = 500;

type Row = Record<string, unknown>;
export type Table = "memories" | "relations" | "history";
/** How many rows of each table the copy holds. */
type Staged = Record<Table, number>;

/** What memory_export_begin counted, and the bounds the copy keeps. */
type Begun = Staged & { rows_max: number; chunk_rows: number };

const COPY_START = { at: "-infinity", id: "00000000-0000-0000-0000-000000000000" };

/**
 * Copies the tenant's `parts` for export `exportId` in `tx`, a REPEATABLE READ transaction: each
 * statement copies export_copy_chunk_rows rows (keyset: after the last one's time and id) and reads
 * the snapshot of the transaction's first, so all of them show one instant, as one statement did
 * (docs/operations.md#exports). A tenant with more rows than export_rows_max is refused before
 * anything is copied (422); a copy still running at `deadline` stops (503: the load decides it,
 * a retry may pass). `afterChunk` runs after each statement (tests write between two).
 */
export async function stageExport(
  tx: Tx,
  exportId: string,
  parts: readonly Table[],
  deadline: number,
  afterChunk: () => Promise<void> = () => Promise.resolve(),
): Promise<Staged> {
  const [begun] = await tx<Begun[]>`select * from public.memory_export_begin(${exportId}, ${parts as Table[]})`
    .catch((err) => {
      // Another server is copying this tenant (memory_export_begin's lock): one copy a tenant at a
      // time, as one server keeps (db-snapshot.ts), rather than waiting on it to fail.
      if ((err as { code?: unknown }).code !== "55P03") throw err;
      const retry = { "retry-after": String(SNAPSHOT_RETRY_AFTER_SECONDS) };
      throw new HttpError(429, "export_running", "an export of this tenant is being copied: retry", undefined, retry);
    });
  const { rows_max: max, chunk_rows: chunk, ...counted } = begun!;
  const rows = counted.memories + counted.relations + counted.history;
  if (max > 0 && rows > max) {
    throw new HttpError(
      422,
      "export_too_large",
      `the export would copy ${rows} rows (memories, relations and history; the Markdown export: memories), more than export_rows_max (${max}) in public.memory_settings`,
    );
  }
  const staged: Staged = { memories: 0, relations: 0, history: 0 };
  for (const part of parts) {
    let after = COPY_START;
    for (;;) {
      if (Date.now() >= deadline) {
        throw new HttpError(
          503,
          "database_unavailable",
          `the export's copy did not finish in its bound (${staged[part]} ${part} of ${counted[part]} copied): retry`,
          undefined,
          { "retry-after": "5" },
        );
      }
      const [c] = await tx<{ copied: number; last_at: string; last_id: string }[]>`
        select copied, last_at::text, last_id::text
          from public.memory_export_copy(${exportId}, ${part}, ${
        staged[part]
      }, ${after.at}::text::timestamptz, ${after.id}, ${chunk})`;
      staged[part] += c!.copied;
      await afterChunk();
      if (c!.copied < chunk) break;
      after = { at: c!.last_at, id: c!.last_id };
    }
  }
  return staged;
}

/** An export's copy, and how its pages are read. */
interface Source {
  exportId: string;
  staged: Staged;
  read: PageReader;
}

/**
 * One page of a table's copy in its export order (memories and relations by creation, history by
 * ts), after place `after`: each row typed back from its copy, in the shape the tables gave.
 */
function pageQuery(tx: Tx, exportId: string, table: Table, after: number) {
  const page = tx`public.memory_export_page(${exportId}, ${table}, ${after}, ${EXPORT_PAGE_ROWS}) p`;
  switch (table) {
    case "memories":
      return tx`
        select p.n, ${memoryColumns(tx, "m")}
          from ${page} cross join lateral jsonb_populate_record(null::public.devai_memories, p.item) m
         order by p.n`;
    case "relations":
      return tx`
        select p.n, r.id, r.from_id, r.to_id, r.relation_type, r.strength, r.confidence, r.evidence, r.valid_from,
               r.valid_until, r.created_at
          from ${page} cross join lateral jsonb_populate_record(null::public.memory_relations, p.item) r
         order by p.n`;
    case "history":
      return tx`
        select p.n, h.id, h.memory_id, h.event, h.old_ref, h.new_ref, h.actor, h.old_content, h.new_content, h.meta, h.ts
          from ${page} cross join lateral jsonb_populate_record(null::public.memory_history, p.item) h
         order by p.n`;
  }
}

/** Every row of a table, a page at a time, in export order (without the place column). */
async function* rowsOf(source: Source, table: Table): AsyncGenerator<Row[]> {
  let after = 0;
  for (;;) {
    const rows = await source.read((tx) => pageQuery(tx, source.exportId, table, after));
    if (rows.length > 0) {
      after = rows.at(-1)!.n as number;
      yield rows.map(({ n: _, ...row }) => row);
    }
    if (rows.length < EXPORT_PAGE_ROWS) break;
  }
  // Short of what was copied: the copy went while it was read (the tenant's next export replaced
  // it, the database restarted and emptied it, devai-export-rows-prune). Never a partial export.
  if (after !== source.staged[table]) {
    throw new SnapshotEndedError(
      `the export's copy went while it was read (${table}: ${after} of ${source.staged[table]})`,
    );
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
async function* jsonChunks(source: Source, head: Row): AsyncGenerator<string> {
  const counts = { memories: 0, soft_deleted: 0, relations: 0, history: 0 };
  let before = openObject({ ...head, format: "json" });
  for (const table of ["memories", "relations", "history"] as const) {
    const pages = (async function* () {
      for await (const rows of rowsOf(source, table)) {
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
async function* markdownFiles(source: Source): AsyncGenerator<MarkdownFile[]> {
  const paths = new MarkdownPaths();
  for await (const rows of rowsOf(source, "memories")) {
    yield rows.map((row) => {
      const m = toMemory(row);
      return { path: paths.pathFor(m), content: memoryToMarkdown(m) };
    });
  }
}

async function* markdownJsonChunks(source: Source, head: Row): AsyncGenerator<string> {
  yield* arrayChunks(markdownFiles(source), `${openObject({ ...head, format: "markdown" })},"files":`);
  yield "}";
}

async function* tarChunks(source: Source, mtime: Date): AsyncGenerator<Uint8Array> {
  for await (const files of markdownFiles(source)) {
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
  const chunksOf = (source: Source): AsyncGenerator<string | Uint8Array> =>
    tar
      ? tarChunks(source, exportedAt)
      : q.format === "markdown"
      ? markdownJsonChunks(source, head)
      : jsonChunks(source, head);
  const exportId = crypto.randomUUID();
  const parts: Table[] = q.format === "markdown" ? ["memories"] : ["memories", "relations", "history"];
  let stream: ReadableStreamDefaultController<Uint8Array> | undefined;
  const chunks = inStagedSnapshot(deps.sql, tenant, {
    stage: (tx, deadline) => stageExport(tx, exportId, parts, deadline),
    drop: (tx) => tx`select public.memory_export_drop(${exportId})`,
    // The client took nothing for the idle bound, its copy is gone: the stream is errored now, not at
    // a next read that without the local server's guard (Supabase's runtime) may never come, so its
    // queued page is let go; the body ends cut short (no chunked end; no EXPORT-INCOMPLETE.txt, which
    // cannot overtake unread bytes). Deno's server sees it once its socket takes the chunk in hand.
    abandoned: (why) => {
      if (cancelled) return;
      cancelled = true;
      console.error(JSON.stringify({ level: "error", msg: "export abandoned by its client", error: why }));
      stream?.error(new SnapshotEndedError(`the snapshot ended: ${why}`));
      void chunks.return(undefined);
    },
  }, (staged, read) => chunksOf({ exportId, staged, read }));
  let first: string | Uint8Array | undefined = (await chunks.next()).value ?? undefined;
  // An archive's chunks are its files, one each (then its end).
  let sent = 0;
  let failure: { err: unknown } | undefined;
  let cancelled = false;
  const body = new ReadableStream<Uint8Array>({
    start: (controller) => void (stream = controller),
    async pull(controller) {
      if (failure) return controller.error(failure.err);
      try {
        const value = first ?? (await chunks.next()).value;
        first = undefined;
        // The client went away while the stream read ahead of it: nothing to send it.
        if (cancelled) return;
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
      cancelled = true;
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
