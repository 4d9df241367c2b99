/**
 * `baton server start --workers N` as real processes (the bundle): on PostgreSQL two workers share
 * the port and both serve, one of them leads the singleton services, a worker killed with SIGKILL is
 * replaced by the primary while the other serves on, SIGTERM to the primary stops every worker
 * cleanly, and a primary killed with SIGKILL leaves no worker behind. On either database: more than
 * one worker on the embedded database, and 0 workers, are refused with one line, and a first worker
 * that cannot start stops the primary with its error printed once. The primary's
 * supervision on the TestClock: test/cluster/primary.test.ts.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as net from "node:net"
import pg from "pg"
import { onServer, scopedDatabase } from "../support/database.ts"
import { BUNDLE, call, ensureBundle, ok, type ServerProcess, scopedEmptyHome, scopedServerProcess } from "../support/server-process.ts"
import { until } from "./kill-invariants.ts"

/** `until`, saying what did not come. */
const waitFor = (what: string, check: () => boolean | Promise<boolean>, withinMs: number, everyMs = 100) =>
  Effect.promise(() => until(check, withinMs, everyMs).catch((error: Error) => Promise.reject(new Error(`${what}: ${error.message}`))))

/** The fields of /proc/<pid>/stat after the command name: [state, ppid, …]; undefined when there is no such process. */
const stat = (pid: number): Array<string> | undefined => {
  try {
    const text = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
    return text.slice(text.lastIndexOf(")") + 2).split(" ")
  } catch {
    return undefined
  }
}

/** Whether `pid` runs (a zombie, exited and not yet reaped, does not). */
const alive = (pid: number) => {
  const fields = stat(pid)
  return fields !== undefined && fields[0] !== "Z"
}

/** The running processes whose parent is `pid`. */
const childrenOf = (pid: number): Array<number> =>
  fs.readdirSync("/proc")
    .filter((entry) => /^\d+$/.test(entry))
    .map(Number)
    .filter((child) => alive(child) && stat(child)?.[1] === String(pid))
    .sort((a, b) => a - b)

/** The inode of the server's end of the established TCP connection from client port `client` to `port`. */
const serverEnd = (port: number, client: number): string | undefined => {
  for (const table of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    const lines = fs.existsSync(table) ? fs.readFileSync(table, "utf8").trim().split("\n").slice(1) : []
    for (const line of lines) {
      const [, local, remote, state, , , , , , inode] = line.trim().split(/\s+/)
      const portOf = (address: string | undefined) => Number.parseInt(address!.split(":")[1]!, 16)
      if (portOf(local) === port && portOf(remote) === client && state === "01") return inode
    }
  }
  return undefined
}

/** Which of `pids` holds the server's end of the connection from client port `client` to `port`. */
const holderOf = (pids: ReadonlyArray<number>, port: number, client: number): number | undefined => {
  const inode = serverEnd(port, client)
  return pids.find((pid) =>
    fs.readdirSync(`/proc/${pid}/fd`).some((fd) => {
      try {
        return fs.readlinkSync(`/proc/${pid}/fd/${fd}`) === `socket:[${inode}]`
      } catch {
        return false
      }
    })
  )
}

/** A connection that sent one request, got its answer, and stays open (keep-alive). */
const openConnection = (port: number) =>
  Effect.acquireRelease(
    Effect.promise(() =>
      new Promise<{ readonly socket: net.Socket; readonly answer: string }>((resolve, reject) => {
        const socket = net.connect(port, "127.0.0.1", () => socket.write(`GET /v2/api/ready HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`))
        socket.once("data", (chunk) => resolve({ socket, answer: String(chunk).split("\r\n")[0]! }))
        socket.once("error", reject)
      })
    ),
    ({ socket }) => Effect.sync(() => socket.destroy())
  )

interface Instance {
  readonly pid: number
  readonly api: boolean
  readonly services: ReadonlyArray<string>
  readonly leads: ReadonlyArray<string>
}

const instances = async (server: ServerProcess) => (await ok(server, "GET", "/admin/instances")) as unknown as Array<Instance>

/** The instances among `pids`, and which of them lead. */
const listed = async (server: ServerProcess, pids: ReadonlyArray<number>) => {
  const current = (await instances(server)).filter((instance) => pids.includes(instance.pid))
  return { pids: current.map((instance) => instance.pid).sort((a, b) => a - b), leaders: current.filter((instance) => instance.leads.length > 0) }
}

const portOf = (server: ServerProcess) => Number(new URL(server.api).port)

/** `baton server start --workers 2` on a database of its own, once both workers serve. */
const twoWorkerServer = Effect.gen(function* () {
  yield* Effect.promise(ensureBundle)
  const database = yield* scopedDatabase({ migrated: true })
  const primary = yield* scopedServerProcess({
    home: yield* scopedEmptyHome,
    databaseUrl: database.url!,
    command: ["server", "start", "--workers", "2"]
  })
  yield* waitFor("both workers serving", () => primary.output().includes(`2 workers on port ${portOf(primary)}`), 30_000)
  return { primary, databaseUrl: database.url! }
})

/** Runs `baton` to its end: its exit code and what it wrote. */
const runToExit = (args: ReadonlyArray<string>, env: Record<string, string>) =>
  Effect.promise(() =>
    new Promise<{ readonly code: number | null; readonly stdout: string; readonly stderr: string }>((resolve) => {
      // Nothing of the test run's own database settings leaks in.
      const environment: Record<string, string> = { ...(process.env as Record<string, string>) }
      delete environment.BATON_SERVER_DATABASE_CONNECTION_URL
      Object.assign(environment, env)
      const child = spawn(process.execPath, [BUNDLE, ...args], { env: environment, stdio: ["ignore", "pipe", "pipe"] })
      let stdout = ""
      let stderr = ""
      child.stdout.on("data", (chunk) => (stdout += chunk))
      child.stderr.on("data", (chunk) => (stderr += chunk))
      child.once("exit", (code) => resolve({ code, stdout, stderr }))
    })
  )

describe("baton server start --workers", { concurrent: true }, () => {
  it.scopedLive("refuses more than one worker on the embedded database, fewer than one and more than 256, with one line and nothing started", () =>
    Effect.gen(function* () {
      yield* Effect.promise(ensureBundle)
      const home = yield* scopedEmptyHome
      const embedded = yield* runToExit(["server", "start", "--port", "0", "--workers", "2"], { BATON_HOME: home })
      expect(embedded).toEqual({
        code: 1,
        stdout: "",
        stderr: "2 workers need PostgreSQL: the embedded database is served by one process, one session at a time. " +
          "Set server.database.connection_url (docs/scaling.md), or run one worker.\n"
      })
      // Refused before anything was opened: no embedded database was made.
      expect(fs.readdirSync(home)).toEqual([])
      for (const workers of ["0", "-2", "257"]) {
        expect(yield* runToExit(["server", "start", "--port", "0", "--workers", workers], { BATON_HOME: home })).toEqual({
          code: 1,
          stdout: "",
          stderr: `Invalid setting server.api.workers="${workers}": expected integer >= 1 <= 256\n`
        })
      }
    }), 60_000)

  it.scopedLive("stops, with the first worker's one line and its own, when the first worker cannot start", () =>
    Effect.gen(function* () {
      yield* Effect.promise(ensureBundle)
      const home = yield* scopedEmptyHome
      // Nothing listens on port 1: the first worker cannot reach the database; no second one is started.
      const result = yield* runToExit(["server", "start", "--port", "0", "--workers", "2"], {
        BATON_HOME: home,
        BATON_SERVER_DATABASE_CONNECTION_URL: "postgresql://postgres@127.0.0.1:1/nothing"
      })
      expect(result.code).toBe(1)
      expect(result.stdout).toBe("")
      expect(result.stderr).toMatch(
        /^Cannot connect to PostgreSQL at 127\.0\.0\.1:1\/nothing: connect ECONNREFUSED 127\.0\.0\.1:1\nThe first worker \(pid \d+\) exited with code 1 before it served\.\n$/
      )
    }), 60_000)

  it.scopedLive.skipIf(!onServer())(
    "2 workers on PostgreSQL: both serve, one leads, a killed worker is replaced, SIGTERM stops them all cleanly",
    () =>
      Effect.gen(function* () {
        const { primary, databaseUrl } = yield* twoWorkerServer
        const port = portOf(primary)
        // The start lines once, not once per worker.
        expect(primary.output().split(`API at ${primary.api}`).length - 1).toBe(1)

        // Two processes of the primary's, the primary serving nothing itself.
        const workers = childrenOf(primary.pid)
        expect(workers).toHaveLength(2)
        expect(workers).not.toContain(primary.pid)

        // Each is a full server listed by the database; exactly one leads the singleton services.
        yield* waitFor("both listed, one leading", async () => {
          const now = await listed(primary, workers)
          return now.pids.length === 2 && now.leaders.length === 1
        }, 15_000)
        const all = yield* Effect.promise(() => instances(primary))
        expect(all.map((instance) => instance.pid).sort((a, b) => a - b)).toEqual(workers)
        expect(all.every((instance) => instance.api && instance.services.includes("scheduler"))).toBe(true)
        const leader = (yield* Effect.promise(() => listed(primary, workers))).leaders[0]!
        expect(leader.leads).toEqual(expect.arrayContaining(["cancellation_cleanup", "foreman", "late_runs", "pause_expirations", "repossessor", "scheduler"]))

        // Connections are handed to both workers, each serving the requests of those it holds.
        const connections = yield* Effect.all(Array.from({ length: 6 }, () => openConnection(port)))
        expect(connections.map((connection) => connection.answer)).toEqual(Array(6).fill("HTTP/1.1 200 OK"))
        const holders = connections.map(({ socket }) => holderOf([primary.pid, ...workers], port, socket.localPort!))
        expect(new Set(holders), `the process holding each connection: ${holders}`).toEqual(new Set(workers))

        // The leader killed: the primary says so and starts another worker; the other leads and serves on.
        process.kill(leader.pid, "SIGKILL")
        yield* waitFor("a replacement worker", () => {
          const now = childrenOf(primary.pid)
          return now.length === 2 && !now.includes(leader.pid)
        }, 20_000)
        expect(primary.output()).toMatch(new RegExp(`Worker \\d \\(pid ${leader.pid}\\) was killed by SIGKILL; starting another in 1s`))
        const replaced = childrenOf(primary.pid)
        yield* waitFor("the new worker listed, one of the two leading", async () => {
          const now = await listed(primary, replaced)
          return now.pids.length === 2 && now.leaders.length === 1
        }, 20_000)
        for (let i = 0; i < 10; i++) {
          const created = yield* Effect.promise(() => call(primary, "POST", "/flows/", { name: `after-kill-${i}` }))
          expect(created.status).toBe(201)
        }

        // SIGTERM to the primary: every worker stops cleanly (it removes its own row) before the primary exits.
        yield* Effect.promise(() => primary.kill("SIGTERM"))
        expect(primary.exitCode()).toBe(0)
        expect([...replaced, ...workers].filter(alive)).toEqual([])
        const client = new pg.Client({ connectionString: databaseUrl })
        yield* Effect.promise(() => client.connect())
        const rows = yield* Effect.promise(() => client.query<{ pid: number }>("SELECT pid FROM baton_instance"))
        yield* Effect.promise(() => client.end())
        // Only the killed worker's row is left (forgotten later); the others removed theirs when they stopped.
        expect(rows.rows.map((row) => row.pid)).toEqual([leader.pid])
      }),
    120_000
  )

  it.scopedLive.skipIf(!onServer())("a primary killed with SIGKILL leaves no worker behind", () =>
    Effect.gen(function* () {
      const { primary } = yield* twoWorkerServer
      const workers = childrenOf(primary.pid)
      expect(workers).toHaveLength(2)
      yield* Effect.promise(() => primary.kill("SIGKILL"))
      // Their channel to the primary closes with it, and node:cluster ends a worker whose primary is gone.
      yield* waitFor("no worker left", () => workers.every((pid) => !alive(pid)), 10_000)
    }), 90_000)
})
