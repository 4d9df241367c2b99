/**
 * `npm run bench:ab -- --a DIR/main.js --b DIR/main.js`: the server's CPU per run lifecycle for two
 * builds of Baton at once. Each bundle serves its own fresh database, and one load drives both
 * (simulated worker i through server i % 2), so both see the same machine: a busy machine inflates
 * CPU time per operation, but alike for both. Prints each round and the ratio B/A.
 *
 * A bundle outside dist/ must sit inside the checkout (its packages resolve from node_modules):
 * e.g. `git stash; npm run build; cp -r dist .bench-a; git stash pop; npm run build`, then
 * `--a .bench-a/main.js --b dist/main.js`.
 *
 * Options: --seconds (per round, default 10), --rounds (3), --workers (8, split between the two),
 * --pg (the PostgreSQL server, default postgresql://postgres@127.0.0.1:5432), --port (4390 and the next),
 * --env-a / --env-b (settings for one side only, `KEY=VALUE,KEY=VALUE`: e.g. the same bundle twice,
 * B with a service disabled, says what that service costs per lifecycle),
 * --node-args-a / --node-args-b (node options for one side only, space-separated: V8 flags that
 * NODE_OPTIONS refuses, e.g. `--node-args-b "--initial-old-space-size=128"`),
 * --database (the databases' name prefix, default baton_bench_ab: `…0` and `…1`, dropped and made
 * afresh; another lets two comparisons share a PostgreSQL server).
 *
 * With the PostgreSQL server on this machine, each side's database CPU per lifecycle is printed too:
 * the CPU time of the client backends connected to its database (from /proc), which is where
 * triggers and the statements' own work are paid.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import pg from "pg"
import { apiLifecycle, setUpLifecycle } from "./lifecycle.ts"
import { closedLoop, jsonClient } from "./load.ts"
import { cpuTime, startServer, type StartedServer } from "./startup.ts"

const argument = (name: string, fallback: string) => {
  const at = process.argv.indexOf(`--${name}`)
  return at === -1 ? fallback : process.argv[at + 1] ?? fallback
}
const entries = [argument("a", "dist/main.js"), argument("b", "dist/main.js")]
const seconds = Number(argument("seconds", "10"))
const rounds = Number(argument("rounds", "3"))
const workers = Number(argument("workers", "8"))
const pgUrl = argument("pg", "postgresql://postgres@127.0.0.1:5432").replace(/\/$/, "")
const port = Number(argument("port", "4390"))
const sideEnv = (name: string): Record<string, string> =>
  Object.fromEntries(argument(name, "").split(",").filter((pair) => pair.includes("=")).map((pair) => {
    const at = pair.indexOf("=")
    return [pair.slice(0, at), pair.slice(at + 1)]
  }))
const envs = [sideEnv("env-a"), sideEnv("env-b")]
const sideNodeArgs = (name: string) => argument(name, "").split(" ").filter((arg) => arg !== "")
const nodeArgs = [sideNodeArgs("node-args-a"), sideNodeArgs("node-args-b")]
const prefix = argument("database", "baton_bench_ab")
if (!/^[a-z_][a-z0-9_]*$/.test(prefix)) throw new Error(`--database ${prefix}: lower-case letters, digits and _ only`)

/** CPU time in ms of each client backend connected to `database` (those whose /proc entry is readable). */
const backendsCpu = async (admin: pg.Client, database: string) => {
  const { rows } = await admin.query<{ pid: number }>(
    "SELECT pid FROM pg_stat_activity WHERE datname = $1 AND backend_type = 'client backend'",
    [database]
  )
  const cpu = new Map<number, number>()
  for (const { pid } of rows) {
    try {
      cpu.set(pid, cpuTime(pid))
    } catch {
      // Not on this machine, or gone.
    }
  }
  return cpu
}

/** The CPU the backends used between two readings (a backend that appeared in between counts from 0). */
const usedSince = (before: Map<number, number>, after: Map<number, number>) =>
  [...after].reduce((sum, [pid, ms]) => sum + ms - (before.get(pid) ?? 0), 0)

const main = async () => {
  const admin = new pg.Client({ connectionString: `${pgUrl}/postgres` })
  await admin.connect()
  const servers: Array<{ server: StartedServer; setup: Awaited<ReturnType<typeof setUpLifecycle>>; api: ReturnType<typeof jsonClient> }> = []
  try {
    for (const [i, entry] of entries.entries()) {
      const database = `${prefix}${i}`
      await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`)
      await admin.query(`CREATE DATABASE ${database}`)
      const server = await startServer({
        entry,
        home: fs.mkdtempSync(path.join(os.tmpdir(), "baton-bench-ab-")),
        port: port + i,
        databaseUrl: `${pgUrl}/${database}`,
        env: { BATON_SERVER_SERVICES_SCHEDULER_ENABLED: "false", ...envs[i] },
        nodeArgs: nodeArgs[i]!,
        timeoutMs: 120_000
      })
      const api = jsonClient(`http://127.0.0.1:${port + i}/v2/api`)
      servers.push({ server, api, setup: await setUpLifecycle(api, workers) })
    }
    const counts = [0, 0]
    const drive = (worker: number) => {
      const side = worker % 2
      return apiLifecycle(servers[side]!.api, servers[side]!.setup)(Math.floor(worker / 2)).then(() => void counts[side]!++)
    }
    await closedLoop(workers, 3, drive)
    const totals = [{ cpu: 0, db: 0, runs: 0 }, { cpu: 0, db: 0, runs: 0 }]
    for (let round = 0; round < rounds; round++) {
      counts[0] = 0
      counts[1] = 0
      const before = servers.map((s) => cpuTime(s.server.pid))
      const dbBefore = await Promise.all([0, 1].map((i) => backendsCpu(admin, `${prefix}${i}`)))
      await closedLoop(workers, seconds, drive)
      const used = servers.map((s, i) => cpuTime(s.server.pid) - before[i]!)
      const dbAfter = await Promise.all([0, 1].map((i) => backendsCpu(admin, `${prefix}${i}`)))
      const dbUsed = [0, 1].map((i) => usedSince(dbBefore[i]!, dbAfter[i]!))
      for (const i of [0, 1]) {
        totals[i]!.cpu += used[i]!
        totals[i]!.db += dbUsed[i]!
        totals[i]!.runs += counts[i]!
      }
      console.log(
        `round ${round + 1}: A ${(used[0]! / counts[0]!).toFixed(2)} ms + database ${(dbUsed[0]! / counts[0]!).toFixed(2)} ms (${counts[0]} runs), B ${(used[1]! / counts[1]!).toFixed(2)} ms + database ${(dbUsed[1]! / counts[1]!).toFixed(2)} ms (${counts[1]} runs), load average ${os.loadavg()[0]!.toFixed(1)}`
      )
    }
    const [a, b] = totals.map((t) => t.cpu / t.runs)
    const [dbA, dbB] = totals.map((t) => t.db / t.runs)
    console.log(`server CPU per lifecycle: A ${a!.toFixed(2)} ms, B ${b!.toFixed(2)} ms, B/A ${(b! / a!).toFixed(3)}`)
    console.log(`database CPU per lifecycle: A ${dbA!.toFixed(2)} ms, B ${dbB!.toFixed(2)} ms, B/A ${(dbB! / dbA!).toFixed(3)}`)
    console.log(`lifecycles: A ${totals[0]!.runs}, B ${totals[1]!.runs} (${(totals[0]!.runs / (rounds * seconds)).toFixed(1)} and ${(totals[1]!.runs / (rounds * seconds)).toFixed(1)} a second)`)
  } finally {
    for (const s of servers) await s.server.stop()
    for (const i of [0, 1]) await admin.query(`DROP DATABASE IF EXISTS ${prefix}${i} WITH (FORCE)`)
    await admin.end()
  }
}

main().then(() => process.exit(0), (error) => {
  console.error(error)
  process.exit(1)
})
