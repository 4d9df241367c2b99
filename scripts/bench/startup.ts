/**
 * Start-up time and idle memory of the server as `baton server start` runs it (bin/baton.mjs run as
 * a command, as `npm start` and `npx baton` run it: so the bundle in dist/ when it is current).
 *
 *   npx tsx scripts/bench/startup.ts [--runs N] [--port P] [--database-url URL] [--idle-seconds S]
 *                                    [--entry FILE] [--no-build]
 *
 * It builds the bundle first (npm run build; --no-build skips that), so bin/baton.mjs runs
 * dist/main.js as `npm start` does. With a fresh embedded home (or the PostgreSQL database given), it
 * starts the server once so the migrations are applied, stops it, then starts it again `runs` times
 * on the same home and reports, for each of those starts, the milliseconds from spawn until
 * GET /v2/api/health answers 200 and the resident memory (VmRSS) a few seconds later with the server
 * idle. It warns when a file under src/ changed during the run: bin/baton.mjs then ran the sources
 * through tsx instead of the bundle.
 *
 * Other benches can import `measureStartup`, `startServer` and `idleRss`.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as http from "node:http"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..")
const BIN = path.join(ROOT, "bin", "baton.mjs")

export interface StartupOptions {
  /** The Baton home directory (the embedded database lives under it). */
  readonly home: string
  /** Port to serve on; 4320 unless given. */
  readonly port?: number
  /** A PostgreSQL URL; when given the server uses it instead of the embedded database. */
  readonly databaseUrl?: string
  /** Extra environment variables for the server. */
  readonly env?: Readonly<Record<string, string>>
  /** Extra arguments after `server start` (e.g. `--no-services`). */
  readonly args?: ReadonlyArray<string>
  /** Give up after this many milliseconds; 60 000 unless given. */
  readonly timeoutMs?: number
  /** The script node runs; bin/baton.mjs unless given (a bundle such as dist/main.js also works). */
  readonly entry?: string
  /** Options for node itself, before the script (e.g. V8 flags). */
  readonly nodeArgs?: ReadonlyArray<string>
  /** Where the server's output goes; ignored unless given. */
  readonly stdio?: "inherit" | "ignore"
}

export interface StartedServer {
  readonly process: ChildProcess
  readonly pid: number
  /** Milliseconds from spawn until GET /v2/api/health answered 200. */
  readonly startupMs: number
  /** CPU time (user + system) the server had used by then, in milliseconds: steadier than startupMs on a busy machine. */
  readonly startupCpuMs: number
  readonly url: string
  /** Stops the server with SIGTERM and waits for it to exit. */
  readonly stop: () => Promise<void>
}

const healthy = (url: string): Promise<boolean> =>
  new Promise((resolve) => {
    const req = http.get(url, { agent: false }, (res) => {
      res.resume()
      resolve(res.statusCode === 200)
    })
    req.on("error", () => resolve(false))
    req.setTimeout(1000, () => {
      req.destroy()
      resolve(false)
    })
  })

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * The environment bin/baton.mjs's launcher line (`export NAME="${NAME-value}"`, read by sh when the
 * file runs as a command) gives node, for a server started with node directly with `env`; a variable
 * set in `env` is kept, as the launcher keeps it. The launcher sets the allocator's threshold for the
 * embedded database only: not when `env` names a PostgreSQL server (its URL or host).
 */
export const launcherEnv = (env: Record<string, string | undefined>): Record<string, string> => {
  const launcher = fs.readFileSync(BIN, "utf8").split("\n")[1] ?? ""
  const databaseServer = `${env.BATON_SERVER_DATABASE_CONNECTION_URL ?? ""}${env.BATON_SERVER_DATABASE_HOST ?? ""}` !== ""
  return Object.fromEntries(
    [...launcher.matchAll(/export (\w+)="\$\{\w+-([^}]*)\}"/g)]
      .filter(([, name]) => !(databaseServer && name === "MALLOC_MMAP_THRESHOLD_"))
      .map(([, name, value]) => [name!, env[name!] ?? value!])
  )
}

/**
 * The options bin/baton.mjs's launcher line gives node (`exec node --option … "$0" "$@"`, the last
 * exec of the line), for a server started with node directly; an option of the same name in
 * `given` or in this process's NODE_OPTIONS is kept instead, as the launcher keeps it.
 */
export const launcherNodeArgs = (given: ReadonlyArray<string>): Array<string> => {
  const launcher = fs.readFileSync(BIN, "utf8").split("\n")[1] ?? ""
  const execs = [...launcher.matchAll(/exec node ((?:--\S+ )*)"\$0"/g)]
  const options = (execs[execs.length - 1]?.[1] ?? "").split(" ").filter((arg) => arg !== "")
  const theirs = [...given, ...(process.env.NODE_OPTIONS ?? "").split(/\s+/)]
  return options.filter((option) => !theirs.some((arg) => arg.split("=")[0] === option.split("=")[0]))
}

/** The servers started and not yet exited: outside the bench's session, so a Ctrl-C does not reach them. */
const running = new Set<ChildProcess>()
process.once("exit", () => {
  for (const child of running) child.kill("SIGTERM")
})
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    for (const child of running) child.kill("SIGTERM")
    process.exit(128 + (signal === "SIGINT" ? 2 : 15))
  })
}

/** Spawns `bin/baton.mjs server start` and resolves once /v2/api/health answers 200. */
export const startServer = async (options: StartupOptions): Promise<StartedServer> => {
  const port = options.port ?? 4320
  const env: Record<string, string> = {
    ...(process.env as Record<string, string>),
    BATON_HOME: options.home,
    BATON_SERVER_API_HOST: "127.0.0.1",
    BATON_SERVER_API_PORT: String(port),
    ...(options.databaseUrl !== undefined ? { BATON_SERVER_DATABASE_CONNECTION_URL: options.databaseUrl } : {}),
    ...options.env
  }
  const url = `http://127.0.0.1:${port}/v2/api/health`
  const args = ["server", "start", ...(options.args ?? [])]
  const started = performance.now()
  // As a user starts it: bin/baton.mjs run as a command (its launcher line sets the environment, then
  // execs node). With node options or another entry, node is started here with that same environment
  // and the launcher's node options. In a session of its own, as a service manager starts a server:
  // where the kernel groups processes by session for its fair share (autogroup, on by default in many
  // kernels), a server in the bench's session would share one group's share of the cores with the
  // load that drives it, while each PostgreSQL backend has a group of its own (docs/performance.md,
  // "Seventeenth round").
  const child =
    options.entry === undefined && (options.nodeArgs ?? []).length === 0
      ? spawn(BIN, args, { cwd: ROOT, env, stdio: options.stdio ?? "ignore", detached: true })
      : spawn(process.execPath, [...launcherNodeArgs(options.nodeArgs ?? []), ...(options.nodeArgs ?? []), options.entry ?? BIN, ...args], {
          cwd: ROOT,
          env: { ...launcherEnv(env), ...env },
          stdio: options.stdio ?? "ignore",
          detached: true
        })
  let exited: number | null | undefined
  running.add(child)
  const exit = new Promise<void>((resolve) =>
    child.once("exit", (code) => {
      exited = code
      running.delete(child)
      resolve()
    })
  )
  const stop = async () => {
    if (exited === undefined) child.kill("SIGTERM")
    await exit
  }
  const deadline = started + (options.timeoutMs ?? 60_000)
  for (;;) {
    if (exited !== undefined) throw new Error(`the server exited with code ${exited} before answering`)
    if (await healthy(url)) break
    if (performance.now() > deadline) {
      await stop()
      throw new Error(`the server did not answer ${url} in time`)
    }
    await sleep(5)
  }
  const startupMs = performance.now() - started
  return { process: child, pid: child.pid!, startupMs, startupCpuMs: cpuTime(child.pid!), url, stop }
}

/** Milliseconds from spawn until the server answers GET /v2/api/health with 200; stops it again. */
export const measureStartup = async (options: StartupOptions): Promise<number> => {
  const server = await startServer(options)
  await server.stop()
  return server.startupMs
}

/** The resident set size (VmRSS in /proc/<pid>/status) of process `pid`, in MiB. */
export const idleRss = (pid: number): number => {
  const status = fs.readFileSync(`/proc/${pid}/status`, "utf8")
  const match = /^VmRSS:\s+(\d+)\s+kB/m.exec(status)
  if (match === null) throw new Error(`no VmRSS for process ${pid}`)
  return Number(match[1]) / 1024
}

/** CPU time (user + system) process `pid` has used so far, in milliseconds. */
export const cpuTime = (pid: number): number => {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
  // utime and stime are fields 14 and 15 of the line, in clock ticks (100 a second on Linux).
  return (Number(fields[11]) + Number(fields[12])) * 10
}

export interface StartupReport {
  readonly firstStartMs: number
  readonly starts: ReadonlyArray<{ readonly startupMs: number; readonly startupCpuMs: number; readonly idleRssMiB: number }>
}

/**
 * Starts the server once on `home` (applying migrations), then `runs` more times, measuring each
 * start and the idle RSS `idleSeconds` after it.
 */
export const startupReport = async (
  options: StartupOptions & { readonly runs?: number; readonly idleSeconds?: number }
): Promise<StartupReport> => {
  const firstStartMs = await measureStartup(options)
  const starts: Array<{ startupMs: number; startupCpuMs: number; idleRssMiB: number }> = []
  for (let i = 0; i < (options.runs ?? 1); i++) {
    const server = await startServer(options)
    try {
      await sleep((options.idleSeconds ?? 5) * 1000)
      starts.push({ startupMs: server.startupMs, startupCpuMs: server.startupCpuMs, idleRssMiB: idleRss(server.pid) })
    } finally {
      await server.stop()
    }
  }
  return { firstStartMs, starts }
}

/** The newest modification time of the files under `dir`. */
const newestUnder = (dir: string): number =>
  fs.readdirSync(dir, { withFileTypes: true }).reduce((latest, entry) => {
    const file = path.join(dir, entry.name)
    return Math.max(latest, entry.isDirectory() ? newestUnder(file) : fs.statSync(file).mtimeMs)
  }, 0)

const isMain = process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)

if (isMain) {
  const arg = (name: string) => {
    const i = process.argv.indexOf(`--${name}`)
    return i >= 0 ? process.argv[i + 1] : undefined
  }
  const home = fs.mkdtempSync(path.join(os.tmpdir(), "baton-startup-"))
  const databaseUrl = arg("database-url")
  const entry = arg("entry")
  if (!process.argv.includes("--no-build")) execFileSync(process.execPath, [path.join(ROOT, "scripts", "build.mjs")], { stdio: "inherit" })
  const bundle = path.join(ROOT, "dist", "main.js")
  try {
    const report = await startupReport({
      home,
      port: Number(arg("port") ?? 4320),
      runs: Number(arg("runs") ?? 1),
      idleSeconds: Number(arg("idle-seconds") ?? 5),
      ...(databaseUrl !== undefined ? { databaseUrl } : {}),
      ...(entry !== undefined ? { entry: path.resolve(entry) } : {})
    })
    const database = databaseUrl !== undefined ? "PostgreSQL" : "embedded"
    console.log(`database: ${database}`)
    console.log(`first start (migrations): ${report.firstStartMs.toFixed(0)} ms`)
    for (const [i, s] of report.starts.entries()) {
      console.log(`start ${i + 2}: ${s.startupMs.toFixed(0)} ms (CPU ${s.startupCpuMs.toFixed(0)} ms), idle RSS ${s.idleRssMiB.toFixed(1)} MiB`)
    }
    const times = report.starts.map((s) => s.startupMs).sort((a, b) => a - b)
    const rss = report.starts.map((s) => s.idleRssMiB).sort((a, b) => a - b)
    if (entry === undefined && fs.existsSync(bundle) && newestUnder(path.join(ROOT, "src")) >= fs.statSync(bundle).mtimeMs) {
      console.log("warning: src/ changed during the run, so some starts ran through tsx rather than the bundle")
    }
    if (times.length > 1) {
      console.log(`median: ${times[Math.floor(times.length / 2)]!.toFixed(0)} ms, idle RSS ${rss[Math.floor(rss.length / 2)]!.toFixed(1)} MiB`)
    }
  } finally {
    fs.rmSync(home, { recursive: true, force: true })
  }
}
