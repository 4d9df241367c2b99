/**
 * The real server as its own process (`node main.js server start`, from a bundle built as
 * `npm run build` builds dist/), for tests that kill it: spawned with the environment given, awaited
 * until GET /ready answers 200, killed with any signal.
 *
 * Started from the sources through tsx, a server takes several times longer to start than from a
 * bundle. `ensureBundle` builds one (once, however many test files ask at the same time) into
 * .scratch/test-bundle/, never into dist/: replacing dist/ under a running `baton` or another test
 * that starts bin/baton.mjs could hand it a half-written bundle.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process"
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { Effect } from "effect"
import type { Json } from "./server.ts"

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..")
const BUNDLE_DIR = path.join(ROOT, ".scratch", "test-bundle")
/** The server built as `npm run build` builds dist/main.js (current once `ensureBundle` returns). */
export const BUNDLE = path.join(BUNDLE_DIR, "main.js")
// Outside the bundle's directory, which a build replaces.
const BUILD_LOCK = path.join(os.tmpdir(), `baton-test-bundle-lock-${createHash("sha1").update(ROOT).digest("hex").slice(0, 12)}`)

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

const newest = (dir: string): number => {
  let latest = 0
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const file = path.join(dir, entry.name)
    latest = Math.max(latest, entry.isDirectory() ? newest(file) : fs.statSync(file).mtimeMs)
  }
  return latest
}

const mtime = (file: string) => {
  try {
    return fs.statSync(file).mtimeMs
  } catch {
    return 0
  }
}

/** Whether the bundle was built after the last change to src/, the build and the installed packages (bin/baton.mjs's test). */
const bundleIsCurrent = () => {
  const built = mtime(BUNDLE)
  if (built === 0) return false
  return [
    newest(path.join(ROOT, "src")),
    mtime(path.join(ROOT, "scripts", "build.mjs")),
    mtime(path.join(ROOT, "package.json")),
    mtime(path.join(ROOT, "package-lock.json")),
    mtime(path.join(ROOT, "node_modules", ".package-lock.json"))
  ].every((t) => t < built)
}

/** Builds the test bundle unless it is current; concurrent callers wait for one build. */
export const ensureBundle = async (): Promise<void> => {
  const deadline = Date.now() + 180_000
  while (!bundleIsCurrent()) {
    let owner = false
    try {
      fs.mkdirSync(BUILD_LOCK)
      owner = true
    } catch {
      // Another test file is building: wait for it (a lock older than three minutes is stale).
      if (Date.now() - mtime(BUILD_LOCK) > 180_000) fs.rmSync(BUILD_LOCK, { recursive: true, force: true })
    }
    if (owner) {
      try {
        // Built beside, then moved into place, so no reader sees half a bundle.
        const building = `${BUNDLE_DIR}.building-${process.pid}`
        execFileSync(process.execPath, [path.join(ROOT, "scripts", "build.mjs"), "--outdir", building], { cwd: ROOT, stdio: "ignore" })
        fs.rmSync(BUNDLE_DIR, { recursive: true, force: true })
        fs.renameSync(building, BUNDLE_DIR)
      } finally {
        fs.rmSync(BUILD_LOCK, { recursive: true, force: true })
      }
      return
    }
    if (Date.now() > deadline) throw new Error("the test bundle was not built in time")
    await sleep(250)
  }
}

/** A TCP port nobody listens on right now. */
export const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = net.createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as net.AddressInfo).port
      server.close(() => resolve(port))
    })
  })

export interface ServerProcess {
  readonly pid: number
  /** The API's URL, base path included. */
  readonly api: string
  /** Everything the process wrote so far (stdout and stderr). */
  readonly output: () => string
  /** Sends `signal` and waits for the process to exit. */
  readonly kill: (signal: NodeJS.Signals) => Promise<void>
  readonly exited: () => boolean
  /** The exit code once it has exited (null when a signal ended it), undefined before. */
  readonly exitCode: () => number | null | undefined
}

export interface ServerProcessOptions {
  /** BATON_HOME (the embedded database lives under it). */
  readonly home: string
  /** A PostgreSQL URL; the embedded database when omitted. */
  readonly databaseUrl?: string
  /** More BATON_* settings. */
  readonly env?: Readonly<Record<string, string>>
  /** Give up waiting for /ready after this many milliseconds. */
  readonly readyWithinMs?: number
  /**
   * The command (default `server start`). `server services start` serves no HTTP: it counts as
   * ready once it says its services run.
   */
  readonly command?: ReadonlyArray<string>
}

const SERVICES_RUNNING = "background services running"

const answers = async (url: string): Promise<number | undefined> => {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(2000) })
    await response.arrayBuffer()
    return response.status
  } catch {
    return undefined
  }
}

/** The environment of a server process listening on `port`. */
const processEnv = (options: ServerProcessOptions, port: number): Record<string, string> => {
  const env: Record<string, string> = {
    ...(process.env as Record<string, string>),
    BATON_HOME: options.home,
    BATON_SERVER_API_HOST: "127.0.0.1",
    BATON_SERVER_API_PORT: String(port),
    // As in the in-process test server: no looking for an installed prefect package unless asked.
    BATON_SERVER_UI_DISCOVER_PREFECT_PACKAGE: "false",
    ...(options.databaseUrl !== undefined ? { BATON_SERVER_DATABASE_CONNECTION_URL: options.databaseUrl } : {}),
    ...options.env
  }
  // Nothing of the test run's own settings leaks in unless given.
  if (options.databaseUrl === undefined) delete env.BATON_SERVER_DATABASE_CONNECTION_URL
  return env
}

/** A server process expected not to start: its exit code and what it wrote, once it has exited. */
export const failedStart = async (
  options: ServerProcessOptions
): Promise<{ readonly code: number | null; readonly stdout: string; readonly stderr: string }> => {
  const child = spawn(process.execPath, [BUNDLE, ...(options.command ?? ["server", "start"])], {
    cwd: ROOT,
    env: processEnv(options, await freePort()),
    stdio: ["ignore", "pipe", "pipe"]
  })
  let stdout = ""
  let stderr = ""
  child.stdout!.on("data", (chunk) => (stdout += chunk))
  child.stderr!.on("data", (chunk) => (stderr += chunk))
  const timer = setTimeout(() => child.kill("SIGKILL"), options.readyWithinMs ?? 60_000)
  // "close", not "exit": by then everything it wrote has been read.
  const code = await new Promise<number | null>((resolve) => child.once("close", (exitCode) => resolve(exitCode)))
  clearTimeout(timer)
  return { code, stdout, stderr }
}

/** Starts the server and resolves once GET /ready answers 200 (its database answers). */
export const startServerProcess = async (options: ServerProcessOptions): Promise<ServerProcess> => {
  const port = await freePort()
  const env = processEnv(options, port)
  const command = options.command ?? ["server", "start"]
  const servicesOnly = command.join(" ") === "server services start"
  const child: ChildProcess = spawn(process.execPath, [BUNDLE, ...command], { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"] })
  let output = ""
  child.stdout!.on("data", (chunk) => (output += chunk))
  child.stderr!.on("data", (chunk) => (output += chunk))
  let exitCode: number | null | undefined
  let exitSignal: NodeJS.Signals | null = null
  const exit = new Promise<void>((resolve) =>
    child.once("exit", (code, signal) => {
      exitCode = code
      exitSignal = signal
      resolve()
    })
  )
  const server: ServerProcess = {
    pid: child.pid!,
    api: `http://127.0.0.1:${port}/v2/api`,
    output: () => output,
    exited: () => exitCode !== undefined,
    exitCode: () => exitCode,
    kill: async (signal) => {
      if (exitCode === undefined) child.kill(signal)
      await exit
    }
  }
  const deadline = Date.now() + (options.readyWithinMs ?? 60_000)
  while (true) {
    if (exitCode !== undefined) {
      throw new Error(`the server exited (code ${exitCode}, signal ${exitSignal}) before it was ready:\n${output}`)
    }
    if (servicesOnly ? output.includes(SERVICES_RUNNING) : (await answers(`${server.api}/ready`)) === 200) return server
    if (Date.now() > deadline) {
      await server.kill("SIGKILL")
      throw new Error(`the server was not ready in time:\n${output}`)
    }
    await sleep(50)
  }
}

export interface JsonResponse {
  readonly status: number
  /** The body parsed as JSON, or the text when it is not JSON. */
  readonly body: Json
}

/** One JSON request to a server process; rejects when the connection fails (a killed server). */
export const call = async (server: ServerProcess, method: string, route: string, body?: unknown): Promise<JsonResponse> => {
  const response = await fetch(server.api + route, {
    method,
    ...(body !== undefined ? { body: JSON.stringify(body), headers: { "content-type": "application/json" } } : {})
  })
  const text = await response.text()
  let parsed: Json
  try {
    parsed = JSON.parse(text)
  } catch {
    parsed = text as Json
  }
  return { status: response.status, body: parsed }
}

/** `call`, expecting `status`. */
export const ok = async (server: ServerProcess, method: string, route: string, body?: unknown, status = 200): Promise<Json> => {
  const response = await call(server, method, route, body)
  if (response.status !== status) {
    throw new Error(`${method} ${route}: expected ${status}, got ${response.status}: ${JSON.stringify(response.body)}`)
  }
  return response.body
}

/** A server process for the scope; killed with SIGKILL at its end if the test has not stopped it. */
export const scopedServerProcess = (options: ServerProcessOptions) =>
  Effect.acquireRelease(Effect.promise(() => startServerProcess(options)), (server) => Effect.promise(() => server.kill("SIGKILL")))

/** An empty BATON_HOME for the scope, removed at its end. */
export const scopedEmptyHome = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "baton-home-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)
