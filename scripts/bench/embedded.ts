/**
 * The embedded database's memory and throughput: a server of its own on a fresh embedded home
 * (`baton server start` through bin/baton.mjs), its idle RSS, then the run lifecycle for a while
 * with the RSS sampled every second, then the RSS once the load has stopped for a while.
 *
 *   npx tsx scripts/bench/embedded.ts [--seconds 60] [--settle-seconds 30] [--workers 8] [--port 4380]
 *                                     [--node-args "--flag=value …"] [--no-build]
 *
 * `npm run bench` runs it beside the PostgreSQL rows (scenario `embedded`); run alone it prints the
 * same rows, and --node-args passes V8 options to the server to compare settings.
 */
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { apiLifecycle, setUpLifecycle } from "./lifecycle.ts"
import { closedLoop, jsonClient, sleep } from "./load.ts"
import { type Row, table } from "./report.ts"
import { cpuTime, idleRss, startServer } from "./startup.ts"

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..")

export interface EmbeddedBenchOptions {
  readonly port: number
  /** Simulated workers driving the lifecycle. */
  readonly workers: number
  /** How long the load lasts. */
  readonly seconds: number
  /** How long after the load the settled RSS is read. */
  readonly settleSeconds: number
  /** Seconds of idling after start before the idle RSS is read. */
  readonly idleSeconds?: number
  /** V8 options for the server's node (to compare settings). */
  readonly nodeArgs?: ReadonlyArray<string>
  readonly env?: Readonly<Record<string, string>>
}

export interface EmbeddedBenchResult {
  readonly idleRssMiB: number
  readonly startupMs: number
  readonly startupCpuMs: number
  readonly throughput: number
  readonly p50: number
  readonly p99: number
  readonly count: number
  readonly errors: number
  /** Server CPU time per lifecycle over the load, in milliseconds. */
  readonly cpuMsPerOp: number
  readonly peakRssMiB: number
  /** The RSS when the load stopped, and `settleSeconds` later. */
  readonly endRssMiB: number
  readonly settledRssMiB: number
  /** Seconds after the load until a quarter of what it added was given back (none within `settleSeconds`). */
  readonly settledAfterSeconds?: number
  /** One sample a second over the load: seconds since it began, MiB. */
  readonly samples: ReadonlyArray<{ readonly at: number; readonly rssMiB: number }>
}

/**
 * Starts an embedded server on a fresh home (stopped and removed again at the end), reads its idle
 * RSS, drives the lifecycle with `workers` workers for `seconds` while sampling its RSS every second,
 * then reads the RSS `settleSeconds` after the load stopped.
 */
export const embeddedBench = async (options: EmbeddedBenchOptions): Promise<EmbeddedBenchResult> => {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), "baton-bench-embedded-"))
  const serverOptions = {
    home,
    port: options.port,
    ...(options.nodeArgs !== undefined ? { nodeArgs: options.nodeArgs } : {}),
    ...(options.env !== undefined ? { env: options.env } : {}),
    timeoutMs: 120_000
  }
  try {
    // The first start creates the database and applies the migrations; the one measured opens it, as
    // a server that restarts does.
    await (await startServer(serverOptions)).stop()
    const server = await startServer(serverOptions)
    try {
      await sleep((options.idleSeconds ?? 5) * 1000)
      const idleRssMiB = idleRss(server.pid)
      const api = jsonClient(`http://127.0.0.1:${options.port}/v2/api`)
      const setup = await setUpLifecycle(api, options.workers)
      const samples: Array<{ at: number; rssMiB: number }> = []
      const started = performance.now()
      const sample = () => samples.push({ at: (performance.now() - started) / 1000, rssMiB: idleRss(server.pid) })
      const sampler = setInterval(sample, 1000)
      const cpuBefore = cpuTime(server.pid)
      let result
      try {
        result = await closedLoop(options.workers, options.seconds, apiLifecycle(api, setup))
      } finally {
        clearInterval(sampler)
      }
      const cpuMsPerOp = (cpuTime(server.pid) - cpuBefore) / Math.max(1, result.count)
      sample()
      const endRssMiB = samples.at(-1)!.rssMiB
      const peakRssMiB = Math.max(...samples.map((s) => s.rssMiB))
      let settledAfterSeconds: number | undefined
      for (let second = 1; second <= options.settleSeconds; second++) {
        await sleep(1000)
        if (settledAfterSeconds === undefined && peakRssMiB - idleRss(server.pid) >= (peakRssMiB - idleRssMiB) / 4) {
          settledAfterSeconds = second
        }
      }
      return {
        idleRssMiB,
        startupMs: server.startupMs,
        startupCpuMs: server.startupCpuMs,
        throughput: result.throughput,
        p50: result.p50,
        p99: result.p99,
        count: result.count,
        errors: result.errors,
        cpuMsPerOp,
        peakRssMiB,
        endRssMiB,
        settledRssMiB: idleRss(server.pid),
        ...(settledAfterSeconds !== undefined ? { settledAfterSeconds } : {}),
        samples
      }
    } finally {
      await server.stop()
    }
  } finally {
    fs.rmSync(home, { recursive: true, force: true })
  }
}

/**
 * Whether the RSS settled back: within `settleSeconds` after the load (read each second) it gave back
 * at least a quarter of what the load added to the idle RSS. It cannot come back to idle:
 * WebAssembly memory does not shrink, and the optimised code and what the C allocator keeps of its
 * compilation stay.
 */
export const settledBack = (result: EmbeddedBenchResult) => result.settledAfterSeconds !== undefined

/** The bench's rows for one `embeddedBench` result. */
export const embeddedRows = (result: EmbeddedBenchResult, options: EmbeddedBenchOptions): ReadonlyArray<Row> => [
  {
    scenario: "embedded database: server idle after start",
    rssMiB: result.idleRssMiB,
    target: "RSS < 150 MiB",
    met: result.idleRssMiB < 150,
    note: `${options.idleSeconds ?? 5} s after its second start (${result.startupMs.toFixed(0)} ms, CPU ${result.startupCpuMs.toFixed(0)} ms)`
  },
  {
    scenario: `run lifecycle via API, embedded database (${options.workers} workers)`,
    throughput: result.throughput,
    unit: "runs/s",
    p50: result.p50,
    p99: result.p99,
    rssMiB: result.peakRssMiB,
    cpuMsPerOp: result.cpuMsPerOp,
    target: "peak RSS < 350 MiB, settles back",
    met: result.peakRssMiB < 350 && settledBack(result),
    note: `${options.seconds} s; RSS each second: idle ${result.idleRssMiB.toFixed(0)}, peak ${result.peakRssMiB.toFixed(0)}, ${result.endRssMiB.toFixed(0)} at the end, ${result.settledRssMiB.toFixed(0)} MiB ${options.settleSeconds} s later; ${result.settledAfterSeconds !== undefined ? `a quarter of the growth given back after ${result.settledAfterSeconds} s` : `not a quarter of the growth given back within ${options.settleSeconds} s`}${result.errors > 0 ? `; ${result.errors} errors` : ""}`
  }
]

const isMain = process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)

if (isMain) {
  const argument = (name: string, fallback: string): string => {
    const at = process.argv.indexOf(`--${name}`)
    return at === -1 ? fallback : process.argv[at + 1] ?? fallback
  }
  if (!process.argv.includes("--no-build")) execFileSync(process.execPath, [path.join(ROOT, "scripts", "build.mjs")], { stdio: "inherit" })
  const options: EmbeddedBenchOptions = {
    port: Number(argument("port", "4380")),
    workers: Number(argument("workers", "8")),
    seconds: Number(argument("seconds", "60")),
    settleSeconds: Number(argument("settle-seconds", "30")),
    nodeArgs: argument("node-args", "").split(/\s+/).filter((a) => a !== "")
  }
  const result = await embeddedBench(options)
  console.log(`RSS each second: ${result.samples.map((s) => s.rssMiB.toFixed(0)).join(" ")}`)
  console.log(table(embeddedRows(result, options)))
  console.log(JSON.stringify({ ...result, samples: undefined }))
}
