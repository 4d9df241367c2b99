/**
 * The `baton` command: a server started, stopped with SIGTERM and started again on its data (from
 * the bundle, as `npm start` runs it: through tsx each start would take seconds longer); the
 * settings report (through bin/baton.mjs, as a user types it) and a bad setting refused with one line;
 * bin/baton.mjs run as a command, whose first lines (for sh) set the C allocator's mmap threshold
 * before they start node.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { spawn, spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { seededHome } from "./support/database.ts"
import { SECRET_VALUES, SECRETS } from "./support/secrets.ts"
import { BUNDLE, ensureBundle } from "./support/server-process.ts"

interface Spawned {
  readonly lines: Array<string>
  readonly stderr: Array<string>
  readonly exit: Promise<number | null>
  readonly child: ReturnType<typeof spawn>
}

const BIN = fileURLToPath(new URL("../bin/baton.mjs", import.meta.url))

const baton = (args: ReadonlyArray<string>, env: Record<string, string>, entry = BIN): Spawned => {
  const child = spawn(process.execPath, [entry, ...args], {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"]
  })
  const lines: Array<string> = []
  const stderr: Array<string> = []
  child.stdout!.on("data", (chunk) => lines.push(...String(chunk).split("\n").filter(Boolean)))
  child.stderr!.on("data", (chunk) => stderr.push(...String(chunk).split("\n").filter(Boolean)))
  const exit = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)))
  return { lines, stderr, exit, child }
}

const waitFor = async (check: () => string | undefined, ms: number): Promise<string> => {
  const deadline = Date.now() + ms
  while (Date.now() < deadline) {
    const found = check()
    if (found !== undefined) return found
    await new Promise((r) => setTimeout(r, 50))
  }
  throw new Error("timed out")
}

// The two cases are separate processes that mostly wait on each other's start-up: they run side by side.
describe.concurrent("the baton command", () => {
  it.scopedLive("starts the server, answers, stops cleanly on SIGTERM and starts again on the same data", () =>
    Effect.flatMap(seededHome, (home) => Effect.promise(async () => {
      await ensureBundle()
      for (const round of [1, 2]) {
        const proc = baton(["server", "start", "--port", "0"], { BATON_HOME: home }, BUNDLE)
        try {
          const line = await waitFor(() => proc.lines.find((l) => l.includes("API at ")), 60_000)
          const url = line.slice(line.indexOf("http"))
          const ready = await fetch(`${url}/ready`)
          expect(ready.status, `round ${round}`).toBe(200)
          proc.child.kill("SIGTERM")
          expect(await proc.exit).toBe(0)
          expect(proc.stderr.join("\n")).toBe("")
        } finally {
          // A failed round leaves no server behind.
          if (proc.child.exitCode === null && proc.child.signalCode === null) proc.child.kill("SIGKILL")
        }
      }
    })),
    90_000
  )

  it.live("prints the settings with secrets obfuscated, and stops on a bad value with one line", () =>
    Effect.promise(async () => {
      const ok = baton(["settings"], { ...SECRETS, BATON_SERVER_API_PORT: "4321" })
      expect(await ok.exit, ok.stderr.join("\n")).toBe(0)
      const report = JSON.parse(ok.lines.join("\n"))
      expect(report.api.key).toBe("********")
      expect(report.server.api.auth_string).toBe("********")
      expect(report.server.events.redis_url).toBe("redis://:********@cache.internal:6379/0")
      expect(report.server.api.port).toBe(4321)
      for (const secret of SECRET_VALUES) expect([...ok.lines, ...ok.stderr].join("\n")).not.toContain(secret)

      // The bundle refuses it as bin/baton.mjs would, without loading the sources again through tsx.
      await ensureBundle()
      const bad = baton(["server", "start"], { BATON_SERVER_API_PORT: "abc" }, BUNDLE)
      expect(await bad.exit).toBe(1)
      expect(bad.stderr).toEqual([expect.stringContaining("BATON_SERVER_API_PORT")])
      expect(bad.stderr[0]).toContain('"abc"')
      expect(bad.stderr[0]).toContain("integer")
    }),
    60_000
  )

  it.live("run as a command, sets MALLOC_MMAP_THRESHOLD_ (unless set, or a PostgreSQL server is) and runs node on itself with its arguments and a 64MB semi-space (unless NODE_OPTIONS sets one)", () =>
    Effect.sync(() => {
      // A `node` that says what it was given, found first on PATH as sh looks it up.
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "baton-launcher-"))
      try {
        fs.writeFileSync(path.join(dir, "node"), '#!/bin/sh\nprintf "%s\\n" "threshold=$MALLOC_MMAP_THRESHOLD_" "$@"\n', { mode: 0o755 })
        const run = (env: Record<string, string>) => {
          const {
            MALLOC_MMAP_THRESHOLD_: _,
            NODE_OPTIONS: __,
            BATON_SERVER_DATABASE_CONNECTION_URL: ___,
            BATON_SERVER_DATABASE_HOST: ____,
            ...inherited
          } = process.env
          const result = spawnSync(BIN, ["server", "start", "--host", "a b"], { env: { ...inherited, PATH: `${dir}:${process.env.PATH}`, ...env }, encoding: "utf8" })
          expect(result.status, result.stderr).toBe(0)
          return result.stdout.split("\n").slice(0, -1)
        }
        expect(run({})).toEqual(["threshold=32768", "--max-semi-space-size=64", BIN, "server", "start", "--host", "a b"])
        expect(run({ MALLOC_MMAP_THRESHOLD_: "65536" })[0]).toBe("threshold=65536")
        // On a PostgreSQL server there is no WebAssembly to compile: the allocator keeps its own threshold.
        expect(run({ BATON_SERVER_DATABASE_CONNECTION_URL: "postgresql://db/baton" })).toEqual(["threshold=", "--max-semi-space-size=64", BIN, "server", "start", "--host", "a b"])
        expect(run({ BATON_SERVER_DATABASE_HOST: "db" })[0]).toBe("threshold=")
        expect(run({ BATON_SERVER_DATABASE_HOST: "db", MALLOC_MMAP_THRESHOLD_: "65536" })[0]).toBe("threshold=65536")
        // A size the operator gives in NODE_OPTIONS is theirs.
        expect(run({ NODE_OPTIONS: "--max-semi-space-size=8" })).toEqual(["threshold=32768", BIN, "server", "start", "--host", "a b"])
      } finally {
        fs.rmSync(dir, { recursive: true, force: true })
      }
    })
  )
})
