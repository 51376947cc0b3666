// The bounds tests/support/work.ts holds counted work to, apart so that the counting child
// (tests/support/work_meter.ts) stops counting a regex call once it is past them.

/**
 * Work may grow at most this many times for 16 times the text: linear is 16 (a regex call's
 * backtracks are counted within a factor of 2: up to 32), quadratic 256 (at least 128).
 */
export const GROWTH_PER_16X = 64;

/**
 * A regex call may backtrack at most this many times per character it could read. Today's densest
 * is the redactor's quick test (MAY_HOLD_SECRET, an alternation of about 30 words tried at every
 * character: 33 to 64). A window re-read at every start is quadratic only up to its cap, so growth
 * between two sizes past the cap looks linear; its backtracks per character do not (the old JWT
 * pattern: about 2,000 on `eyJ-` repeated).
 */
export const BACKTRACKS_PER_CHAR = 128;
