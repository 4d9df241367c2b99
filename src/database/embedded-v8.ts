/**
 * V8 tuning for a Baton process on the embedded database. Kept apart from ./embedded.ts, which loads
 * PGlite: the command line decides on it before knowing whether PGlite will be needed.
 */
import * as v8 from "node:v8"

/**
 * Whether node was started with a V8 option of this name, on or off (then it is left alone). Node
 * takes these options on its command line only, not in NODE_OPTIONS.
 */
const givenToNode = (name: string) =>
  process.execArgv.some((arg) => arg.replace(/_/g, "-").replace(/^--no-/, "--").startsWith(name))

/**
 * V8 settings for a server on the embedded database, made before PostgreSQL's WebAssembly module is
 * compiled (measured in docs/performance.md, "Memory and start-up"); an option given on node's
 * command line is left as given. They are process-wide: `baton server start` (src/main.ts) makes
 * them, a program that embeds Baton keeps its own.
 *
 * - V8 optimises the functions PostgreSQL runs most in the background. For the largest of them (38KB
 *   of WebAssembly every query runs, most likely the expression interpreter) the optimiser's
 *   register allocation alone took 24MB of scratch memory, which the C allocator keeps afterwards. V8's
 *   simpler register allocator, which it otherwise keeps for huge functions, needs 4MB there and a
 *   fifth of the time: 16MB less idle and 28MB less under load, for about 5% more CPU per run. V8 12
 *   and later (Node 22) no longer have it.
 * - Under steady load V8 lets the old generation grow to up to four times what survived the last
 *   full collection before it collects again: 180MB of heap, mostly garbage, after a minute of runs
 *   with 50MB live. One and a half times keeps it near what is used, for more frequent full
 *   collections.
 */
export const tuneV8ForEmbedded = () => {
  if (process.versions.v8.startsWith("11.") && !givenToNode("--turbo-force-mid-tier-regalloc")) {
    v8.setFlagsFromString("--turbo-force-mid-tier-regalloc")
  }
  if (!givenToNode("--heap-growing-percent")) v8.setFlagsFromString("--heap-growing-percent=50")
}
