// Every failure of a call, as one error class: the server's { error: { code, message, issues? } },
// or, with status 0, a network failure (the server could not be reached) or a timeout.

export interface MemoryApiIssue {
  path: (string | number)[];
  message: string;
  code?: string;
}

export class MemoryApiError extends Error {
  override name = "MemoryApiError";
  constructor(
    /** HTTP status; 0 when the server could not be reached, did not answer in time, or the call was cancelled. */
    readonly status: number,
    /** Machine-readable: invalid_request, missing_token, not_found, payload_too_large, network_error, timeout, aborted, ... */
    readonly code: string,
    message: string,
    /** zod issues for 400 invalid_request, the field paths of other 400s. */
    readonly issues: MemoryApiIssue[] = [],
    /** Quote it when reporting a 500: the server logged the details under it. */
    readonly requestId?: string,
    /**
     * From the answer's Retry-After (429 rate_limited, 503 database_unavailable …): how many
     * seconds to wait before sending it again; undefined when the server named no wait.
     */
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
  }
}

function isErrorBody(
  v: unknown,
): v is { error: { code: string; message: string; issues?: MemoryApiIssue[]; request_id?: string } } {
  const e = (v as { error?: unknown } | null)?.error as { code?: unknown; message?: unknown } | undefined;
  return typeof e === "object" && e !== null && typeof e.code === "string" && typeof e.message === "string";
}

/** Retry-After as seconds from now: delta-seconds or an HTTP date (RFC 9110 §10.2.3); undefined if neither. */
export function retryAfterSeconds(value: string | null, now = Date.now()): number | undefined {
  if (value === null) return undefined;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v);
  // Every HTTP-date form begins with the day's name; Date.parse alone takes "1.5" or "-1" for dates.
  const at = /^[A-Za-z]{3}/.test(v) ? asctimeAt(v) ?? Date.parse(v) : NaN;
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - now) / 1000));
}

const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

/**
 * An HTTP date in asctime's form ("Sun Nov  6 08:49:37 1994"), which names no zone: GMT, as every
 * HTTP date is (RFC 9110 §5.6.7). Date.parse read it in the machine's zone, hours off. The other two
 * forms (IMF-fixdate, RFC 850) end in "GMT", which Date.parse reads as such.
 */
function asctimeAt(v: string): number | undefined {
  const m = /^[A-Za-z]{3} ([A-Za-z]{3}) +(\d{1,2}) (\d{2}):(\d{2}):(\d{2}) (\d{4})$/.exec(v);
  const month = m ? MONTHS.indexOf(m[1]!) : -1;
  if (!m || month < 0) return undefined;
  return Date.UTC(Number(m[6]), month, Number(m[2]), Number(m[3]), Number(m[4]), Number(m[5]));
}

/** The MemoryApiError for a non-2xx response (its body read here). */
export async function errorFromResponse(res: Response): Promise<MemoryApiError> {
  const requestId = res.headers.get("x-request-id") ?? undefined;
  const retryAfter = retryAfterSeconds(res.headers.get("retry-after"));
  const text = await res.text().catch(() => "");
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  if (isErrorBody(body)) {
    return new MemoryApiError(
      res.status,
      body.error.code,
      body.error.message,
      body.error.issues ?? [],
      body.error.request_id ?? requestId,
      retryAfter,
    );
  }
  return new MemoryApiError(
    res.status,
    "http_error",
    text.slice(0, 500) || `HTTP ${res.status}`,
    [],
    requestId,
    retryAfter,
  );
}

/**
 * The MemoryApiError for a 2xx answer whose body could not be read as the API sends it: cut while
 * it arrived (no `text`: a timeout, the caller's signal or a dropped connection, as a fetch that
 * failed), or not JSON (a proxy's or a captive portal's page answered in the service's place).
 */
export function errorFromBody(err: unknown, res: Response, text: string | undefined, cancelled: boolean) {
  if (text === undefined) return errorFromFetch(err, cancelled);
  const requestId = res.headers.get("x-request-id") ?? undefined;
  const message = `the answer (HTTP ${res.status}) is not JSON: ${text.slice(0, 500)}`;
  return new MemoryApiError(res.status, "http_error", message, [], requestId);
}

/**
 * The MemoryApiError for a fetch that failed before any response. `cancelled`: the caller's signal
 * aborted (fetch then rejects with whatever reason it was given).
 */
export function errorFromFetch(err: unknown, cancelled = false): MemoryApiError {
  if (err instanceof MemoryApiError) return err;
  if (cancelled) return new MemoryApiError(0, "aborted", "the call was cancelled: the client's signal aborted");
  const e = err as { name?: string; message?: string; cause?: { message?: string; code?: string } };
  if (e?.name === "TimeoutError") {
    return new MemoryApiError(0, "timeout", "the functions server did not answer in time");
  }
  const cause = e?.cause?.message ?? e?.cause?.code ?? e?.message;
  return new MemoryApiError(0, "network_error", `could not reach the functions server${cause ? `: ${cause}` : ""}`);
}
