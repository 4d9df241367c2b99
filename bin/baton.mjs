#!/bin/sh
":" //; case "$BATON_SERVER_DATABASE_CONNECTION_URL$BATON_SERVER_DATABASE_HOST" in "") export MALLOC_MMAP_THRESHOLD_="${MALLOC_MMAP_THRESHOLD_-32768}";; esac; case "$NODE_OPTIONS" in *--max-semi-space-size*) exec node "$0" "$@";; esac; exec node --max-semi-space-size=64 "$0" "$@"
// The `baton` command. Runs the bundle dist/main.js (built by `npm run build`, which `npm start`
// runs first) when it is newer than every source it was built from; otherwise loads the TypeScript
// entry point through tsx, so `baton` works straight after `npm install` and a stale bundle is never
// used. Either way the server runs in this same process, so signals reach it directly.
//
// The first two lines are for sh, which runs this file when it is run as a command (`npx baton`,
// `npm start`, `./bin/baton.mjs`); node skips the first and reads the second as a string and a
// comment. sh sets the C allocator's mmap threshold, which glibc reads only when a process starts,
// and gives node a young generation of up to 2 × 64MB instead of 2 × 16MB (unless NODE_OPTIONS
// sets its size), an option V8 also reads only then; then it replaces itself with node (nothing
// stays behind). At 32KB, the blocks V8's optimising
// compiler takes while it compiles the embedded database's WebAssembly (32KB each, tens of MB for its
// largest function) are mapped one by one and given back to the system when freed, instead of
// staying in the allocator's arenas: about 40MB less resident, idle and under load
// (docs/performance.md, "Memory and start-up"). Only for the embedded database: with a PostgreSQL
// server set in the environment (its URL or host) there is no WebAssembly to compile, and each block
// the compiler takes for the server's own code would be a mapping made and unmapped, with its pages
// faulted in afresh (docs/performance.md, "Eighteenth round"). A threshold set in the environment is
// kept; `node bin/baton.mjs` runs without one unless it is set.
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import * as v8 from "node:v8"
import { runInNewContext } from "node:vm"
import { compactWhenQuiet } from "./quiet-compaction.mjs"
import { stopYoungGrowthAt } from "./young-generation.mjs"

/** Whether NODE_OPTIONS holds a V8 option of this name. */
const inNodeOptions = (name) => (process.env.NODE_OPTIONS ?? "").split(/\s+/).some((arg) => arg.startsWith(name))
/** Whether node was started with a V8 option of this name (then Baton leaves it alone). */
const given = (name) => process.execArgv.some((arg) => arg.startsWith(name)) || inNodeOptions(name)

// Idle memory (docs/performance.md, "Memory and start-up"). These are V8 options that still take
// effect once V8 runs (one read only when node starts goes on the `exec node` of the first lines).
//
// The embedded database is PostgreSQL compiled to WebAssembly, which V8 optimises in the background
// as it runs. One compilation task instead of one per core keeps the optimiser's scratch memory,
// which the C allocator holds on to afterwards, about 40MB smaller; the optimised code is the same.
if (!given("--wasm-num-compilation-tasks")) v8.setFlagsFromString("--wasm-num-compilation-tasks=1")
/** Node's usual largest young generation: both halves of 16MB. */
const NODE_YOUNG_GENERATION = 2 * 16 * 1024 * 1024
// Start-up allocates fast and keeps much of what it allocates, so V8 grows its young generation to
// the largest size and keeps it while the server sits idle. It stays at its smallest (2MB) until
// start-up is over (src/main.ts says so), then may grow again under load as usual: on a PostgreSQL
// server up to the 2 × 64MB of the first lines, where fewer, emptier collections of the young
// generation took 8% less CPU per run lifecycle; on the embedded database only up to node's usual
// 2 × 16MB, since there memory counts more (docs/performance.md, "Fourth round").
if (!given("--semi-space-growth-factor")) {
  v8.setFlagsFromString("--semi-space-growth-factor=1")
  process.once("baton:started", (started) => {
    v8.setFlagsFromString("--semi-space-growth-factor=2")
    // A size given in NODE_OPTIONS is the operator's, on either database (the first lines' size is
    // on node's command line, so only NODE_OPTIONS tells the operator's apart).
    if (started?.database === "embedded" && !inNodeOptions("--max-semi-space-size")) stopYoungGrowthAt(NODE_YOUNG_GENERATION)
  })
}
// Start-up also leaves about 8MB of garbage spread over the old generation's pages, which V8's memory
// reducer collects and compacts away only when the server has idled for 30 to 60 s. One full
// collection that compacts, a second after start-up (not in the way of the first requests), brings
// the server to that size at once: about 5MB less resident, for one pause of 0.1 to 0.4 s.
// After that, the same once the server goes quiet after a burst of work that grew the heap
// (bin/quiet-compaction.mjs): memory a burst took is given back within seconds, not minutes.
process.once("baton:started", () =>
  setTimeout(() => {
    compactOnce()
    compactWhenQuiet(
      () => {
        compactOnce()
        return v8.getHeapStatistics().total_heap_size
      },
      () => {
        const cpu = process.cpuUsage()
        return { heapBytes: v8.getHeapStatistics().total_heap_size, cpuMicros: cpu.user + cpu.system, atMs: performance.now() }
      }
    )
  }, 1000).unref()
)

/** One full garbage collection that compacts the heap, through V8's `gc` function (not otherwise exposed). */
const compactOnce = () => {
  try {
    v8.setFlagsFromString("--expose-gc")
    // The flag puts `gc` in contexts made from now on: a new one hands it over.
    const gc = runInNewContext("gc")
    if (!given("--expose-gc")) v8.setFlagsFromString("--no-expose-gc")
    const compacting = given("--compact-on-every-full-gc")
    if (!compacting) v8.setFlagsFromString("--compact-on-every-full-gc")
    gc()
    if (!compacting) v8.setFlagsFromString("--no-compact-on-every-full-gc")
  } catch {
    // Memory given back later by V8 itself, as before.
  }
}

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..")
const bundle = path.join(root, "dist", "main.js")

/** The newest modification time under `dir` (0 when it does not exist). */
const newest = (dir) => {
  let latest = 0
  let entries
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true })
  } catch {
    return 0
  }
  for (const entry of entries) {
    const file = path.join(dir, entry.name)
    latest = Math.max(latest, entry.isDirectory() ? newest(file) : fs.statSync(file).mtimeMs)
  }
  return latest
}

const mtime = (file) => {
  try {
    return fs.statSync(file).mtimeMs
  } catch {
    return 0
  }
}

/** Whether dist/main.js was built after the last change to src/, the build and the installed packages. */
const bundleIsCurrent = () => {
  const built = mtime(bundle)
  if (built === 0) return false
  const sources = [
    newest(path.join(root, "src")),
    mtime(path.join(root, "scripts", "build.mjs")),
    mtime(path.join(root, "package.json")),
    mtime(path.join(root, "package-lock.json")),
    mtime(path.join(root, "node_modules", ".package-lock.json"))
  ]
  return sources.every((t) => t < built)
}

if (bundleIsCurrent()) {
  await import(pathToFileURL(bundle).href)
} else {
  const { register } = await import("tsx/esm/api")
  register()
  await import("../src/main.ts")
}
