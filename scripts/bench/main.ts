/**
 * `npm run bench`: Baton under load on loopback, with the baselines measured in the same run, printed
 * as one table (and saved as JSON under scripts/bench/results/).
 *
 *   npm run bench [-- --pg postgresql://postgres@127.0.0.1:5432] [--embedded] [--seconds 10]
 *     [--workers 8] [--runs 1000000] [--deployments 1000] [--soak-minutes 2] [--embedded-seconds 60] [--quick]
 *     [--only health,create,lifecycle,events,workers,tasks,scheduler,soak,queries,embedded,startup]
 *     [--database baton_bench] [--seeded] [--port 4350] [--node-args "--cpu-prof --cpu-prof-dir=/tmp/prof"]
 *     [--event-rounds 1]
 *
 * With PostgreSQL, the lifecycle also runs through two servers (replicas) and through one server of
 * two worker processes (`--workers 2`).
 *
 * The server runs as `baton server start` does (bin/baton.mjs: the bundle in dist/, which
 * `npm run bench` builds first) against a fresh database (--database, `baton_bench`) on the PostgreSQL at --pg, or
 * with --embedded on a fresh embedded database (the SQL, pg-boss and 1M-run rows then still use
 * PostgreSQL, and the 1M-run queries are skipped). After that server has stopped, a server on an
 * embedded database of its own is measured beside it (`embedded`: idle RSS, then the lifecycle for
 * --embedded-seconds with its RSS sampled each second; scripts/bench/embedded.ts). Scenario by
 * scenario, see docs/performance.md.
 *
 * `--database NAME` uses that database instead of `baton_bench`. With `--seeded` it is neither dropped
 * nor created nor seeded: it already holds runs seeded by scripts/bench/seed.ts (the queries are
 * timed over the runs it has, counted at the start; the server still applies any new migration).
 * Seeding 10M runs takes a while, so it can be done once and the queries measured again and again:
 *
 *   npx tsx scripts/bench/seed.ts --url postgresql://postgres@127.0.0.1:5432/baton_q10m --runs 10000000
 *   npm run bench -- --only queries --runs 10000000 --database baton_q10m --seeded
 */
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import pg from "pg"
import { ingestByPost, ingestByWebsocket, type IngestionResult } from "./events.ts"
import { queryCases } from "./flow-run-queries.ts"
import { backgroundTaskDelivery } from "./background-tasks.ts"
import { embeddedBench, embeddedRows } from "./embedded.ts"
import { apiLifecycle, baselinePool, pgBossLifecycle, setUpLifecycle, sqlLifecycle } from "./lifecycle.ts"
import { cannon, closedLoop, joinRounds, jsonClient, type JsonClient, keepAliveAgent, type LoadResult, percentile, sleep } from "./load.ts"
import { machine, type Row, save, table } from "./report.ts"
import { seedRuns } from "./seed.ts"
import { type CpuSplit, joinSplits, splitSince, startSplit } from "./cpu-split.ts"
import { cpuTime, idleRss, startServer, type StartedServer, startupReport } from "./startup.ts"

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..")

const argument = (name: string, fallback: string): string => {
  const at = process.argv.indexOf(`--${name}`)
  return at === -1 ? fallback : process.argv[at + 1] ?? fallback
}
const flag = (name: string) => process.argv.includes(`--${name}`)

const quick = flag("quick")
const only = argument("only", "")
/** Whether the run includes `scenario` (all of them without --only). */
const runs = (scenario: string) => only === "" || only.split(",").includes(scenario)
const options = {
  pg: argument("pg", process.env.BENCH_PG_URL ?? "postgresql://postgres@127.0.0.1:5432"),
  embedded: flag("embedded"),
  seconds: Number(argument("seconds", quick ? "5" : "10")),
  workers: Number(argument("workers", "8")),
  runs: Number(argument("runs", quick ? "100000" : "1000000")),
  deployments: Number(argument("deployments", quick ? "200" : "1000")),
  soakMinutes: Number(argument("soak-minutes", quick ? "0.5" : "2")),
  port: Number(argument("port", "4350")),
  embeddedSeconds: Number(argument("embedded-seconds", "60")),
  /** The database the bench uses (made afresh, dropped first, unless --seeded): another name lets two benches run at once. */
  database: argument("database", "baton_bench"),
  seeded: flag("seeded"),
  /** Node options for the server under test (space-separated), e.g. `--cpu-prof --cpu-prof-dir=DIR`. */
  nodeArgs: argument("node-args", "").split(" ").filter((arg) => arg !== ""),
  /** How many times the events scenario measures both paths at saturation. */
  eventRounds: Number(argument("event-rounds", "1"))
}

const rows: Array<Row> = []
const record = (row: Row) => {
  rows.push(row)
  console.log(table([row]).split("\n")[2])
}

if (!/^[a-z_][a-z0-9_]*$/.test(options.database)) throw new Error(`--database ${options.database}: lower-case letters, digits and _ only`)
if (options.seeded && options.embedded) throw new Error("--seeded is for a PostgreSQL database (not --embedded)")
const databaseUrl = `${options.pg.replace(/\/$/, "")}/${options.database}`

const freshDatabase = async () => {
  const admin = new pg.Client({ connectionString: `${options.pg.replace(/\/$/, "")}/postgres` })
  await admin.connect()
  await admin.query(`DROP DATABASE IF EXISTS ${options.database} WITH (FORCE)`)
  await admin.query(`CREATE DATABASE ${options.database}`)
  await admin.end()
}

/** How many runs a seeded database holds. */
const seededRuns = async () => {
  const client = new pg.Client({ connectionString: databaseUrl })
  await client.connect()
  try {
    const exists = (await client.query<{ ok: boolean }>(`SELECT to_regclass('flow_run') IS NOT NULL AS ok`)).rows[0]!.ok
    if (!exists) throw new Error(`--seeded: ${options.database} has no flow_run table (seed it with scripts/bench/seed.ts)`)
    return Number((await client.query<{ n: string }>("SELECT count(*) AS n FROM flow_run")).rows[0]!.n)
  } finally {
    await client.end()
  }
}

const startBareHttp = async (port: number): Promise<ChildProcess> => {
  const child = spawn(process.execPath, [path.join(ROOT, "scripts/bench/bare-http.mjs"), String(port)], { stdio: ["ignore", "pipe", "inherit"] })
  await new Promise<void>((resolve, reject) => {
    child.stdout!.once("data", () => resolve())
    child.once("exit", (code) => reject(new Error(`bare http server exited with ${code}`)))
  })
  return child
}

const rssOf = (server: StartedServer) => idleRss(server.pid)

const target = (met: boolean, text: string) => ({ target: text, met })

/** GET /health on bare node:http, then on Baton, then a route through the full router. */
const health = async (server: StartedServer, api: string) => {
  const barePort = options.port + 49
  const bare = await startBareHttp(barePort)
  const baseline = await cannon({ url: `http://127.0.0.1:${barePort}/v2/api/health`, connections: 50, seconds: options.seconds })
  bare.kill()
  record({ scenario: "baseline: bare node:http GET /health", throughput: baseline.throughput, p50: baseline.p50, p99: baseline.p99 })
  const baton = await cannon({ url: `${api}/health`, connections: 50, seconds: options.seconds })
  const ratio = baton.throughput / baseline.throughput
  record({
    scenario: "GET /health (50 connections)",
    throughput: baton.throughput,
    p50: baton.p50,
    p99: baton.p99,
    rssMiB: rssOf(server),
    versus: "bare node:http",
    ratio,
    ...target(ratio >= 0.7, ">= 70%")
  })
  const version = await cannon({ url: `${api}/version`, connections: 50, seconds: options.seconds })
  record({
    scenario: "GET /version (full router, 50 connections)",
    throughput: version.throughput,
    p50: version.p50,
    p99: version.p99,
    rssMiB: rssOf(server),
    versus: "bare node:http",
    ratio: version.throughput / baseline.throughput,
    note: "every request through the Api's router and middleware"
  })
}

/** POST /flow_runs/ with 50 clients as fast as they can, then at a steady rate. */
const create = async (server: StartedServer, api: JsonClient, apiUrl: string) => {
  const flow = await api.post("/flows/", { name: `bench-create-${Date.now()}` })
  const body = { flow_id: flow.id }
  const closed = await cannon({ url: `${apiUrl}/flow_runs/`, method: "POST", body, connections: 50, seconds: options.seconds })
  record({
    scenario: "POST /flow_runs/ (50 clients, closed loop)",
    throughput: closed.throughput,
    p50: closed.p50,
    p99: closed.p99,
    rssMiB: rssOf(server),
    ...target(closed.p99 < 20, "p99 < 20 ms"),
    note: closed.errors > 0 ? `${closed.errors} errors` : "each client sends again as soon as answered"
  })
  const rate = Math.max(50, Math.round(closed.throughput * 0.5))
  const paced = await cannon({ url: `${apiUrl}/flow_runs/`, method: "POST", body, connections: 50, seconds: options.seconds, rate })
  record({
    scenario: `POST /flow_runs/ (50 clients, ${rate} req/s in all)`,
    throughput: paced.throughput,
    p50: paced.p50,
    p99: paced.p99,
    rssMiB: rssOf(server),
    ...target(paced.p99 < 20, "p99 < 20 ms"),
    note: "half the closed-loop throughput, as a steady rate"
  })
}

/**
 * With --embedded the SQL baseline still runs on PostgreSQL: the bench's database there gets Baton's
 * schema and a lifecycle's flow, pool, queues and deployment from a server started on it for that.
 */
const postgresSetup = async () => {
  const server = await secondServer("baseline")
  try {
    return await setUpLifecycle(jsonClient(`http://127.0.0.1:${secondPort}/v2/api`), options.workers)
  } finally {
    await server.stop()
  }
}

/** The port of a second server beside the bench's own. */
const secondPort = options.port + 2

/** A second server on the bench's PostgreSQL database, on secondPort, without a scheduler. */
const secondServer = (name: string) =>
  startServer({
    home: fs.mkdtempSync(path.join(os.tmpdir(), `baton-bench-${name}-`)),
    port: secondPort,
    databaseUrl,
    env: { BATON_SERVER_SERVICES_SCHEDULER_ENABLED: "false" },
    nodeArgs: options.nodeArgs,
    stdio: "inherit",
    timeoutMs: 120_000
  })

/** Rounds of the API's lifecycle and of its SQL, in turns. */
const LIFECYCLE_ROUNDS = 3

/** Lifecycles each server process serves before a lifecycle row is measured, and the warm-up's window. */
const WARM_LIFECYCLES = quick ? 1000 : 5000
const WARM_WINDOW_SECONDS = 5

/**
 * Drives `operation` for at least `least` seconds and until `processes` server processes have
 * served WARM_LIFECYCLES lifecycles each (the load split evenly between them), for at most `most`
 * seconds. A server's CPU per lifecycle falls for its first few thousand lifecycles (its optimising
 * compiler works through the code as it gets hot, its heap's generations grow to their sizes): a
 * minute or more on a 2-core machine, which a fixed warm-up of 15 s did not give it there, and the
 * rows are about a server that has been up a while. Counted in lifecycles, as the compiler counts
 * calls, not in seconds, which differ from machine to machine. Says how long it took and the CPU
 * per lifecycle (of the processes `cpu` reads) of its windows, for the row's note.
 */
const warmUp = async (operation: (worker: number) => Promise<void>, cpu: () => number, processes: number, least: number, most: number) => {
  const started = performance.now()
  const elapsed = () => (performance.now() - started) / 1000
  let served = 0
  const windows: Array<string> = []
  while (elapsed() < least || (served < WARM_LIFECYCLES * processes && elapsed() + WARM_WINDOW_SECONDS <= most)) {
    const before = cpu()
    const window = await closedLoop(options.workers, WARM_WINDOW_SECONDS, operation)
    served += window.count
    windows.push(((cpu() - before) / Math.max(1, window.count)).toFixed(1))
  }
  return `warmed ${served} lifecycles in ${elapsed().toFixed(0)} s (CPU ms/op of each ${WARM_WINDOW_SECONDS} s: ${windows.join(", ")})`
}

/** The run lifecycle with N workers: Baton's API, the same SQL through pg, and pg-boss. */
const lifecycle = async (server: StartedServer, api: JsonClient) => {
  const setup = await setUpLifecycle(api, options.workers)
  const seconds = options.seconds * 1.5
  // Warmed up for its first few thousand lifecycles (and at least as long as it is measured): its CPU
  // per lifecycle falls until then (its compiler and young generation settling, the new tables'
  // first statistics), and a server that has been up a while is what the row is about.
  const warm = await warmUp(apiLifecycle(api, setup), () => cpuTime(server.pid), 1, seconds, 150)
  const sqlSetup = options.embedded ? await postgresSetup() : setup
  // The lifecycles' clients, and the relay's and two consumers' beside them.
  const pool = baselinePool(databaseUrl, options.workers + 3)
  // Its new connections and first plans warmed up too.
  const warming = sqlLifecycle(pool, sqlSetup)
  await closedLoop(options.workers, 3, warming.lifecycle).finally(warming.stop)
  // The API and its SQL in turns, LIFECYCLE_ROUNDS rounds each: a machine whose speed drifts over
  // a minute (a shared host) slows both alike, where one long measurement of each compared moments.
  const apiRounds: Array<{ result: LoadResult; cpuMs: number; split: CpuSplit | undefined }> = []
  const sqlRounds: Array<{ result: LoadResult; split: CpuSplit | undefined }> = []
  try {
    for (let round = 0; round < LIFECYCLE_ROUNDS; round++) {
      const cpuBefore = cpuTime(server.pid)
      const batonFrom = startSplit()
      const result = await closedLoop(options.workers, seconds / LIFECYCLE_ROUNDS, apiLifecycle(api, setup))
      apiRounds.push({ result, cpuMs: cpuTime(server.pid) - cpuBefore, split: splitSince(batonFrom, result.count) })
      // The baseline's relay and consumers run in its rounds only, as the server's work with its lifecycles.
      const baseline = sqlLifecycle(pool, sqlSetup)
      const sqlFrom = startSplit()
      const sqlRound = await closedLoop(options.workers, seconds / LIFECYCLE_ROUNDS, baseline.lifecycle).finally(baseline.stop)
      sqlRounds.push({ result: sqlRound, split: splitSince(sqlFrom, sqlRound.count) })
    }
  } finally {
    await pool.end()
  }
  const baton = joinRounds(apiRounds.map((round) => round.result))
  const cpuMsPerOp = apiRounds.reduce((sum, round) => sum + round.cpuMs, 0) / baton.count
  const batonSplit = joinSplits(apiRounds.map((round) => ({ split: round.split, operations: round.result.count })))
  const sql = joinRounds(sqlRounds.map((round) => round.result))
  const sqlSplit = joinSplits(sqlRounds.map((round) => ({ split: round.split, operations: round.result.count })))
  const roundRatios = apiRounds.map((round, i) => `${((round.result.throughput / sqlRounds[i]!.result.throughput) * 100).toFixed(0)}%`)
  record({
    scenario: `baseline: lifecycle SQL through pg (${options.workers} clients)`,
    throughput: sql.throughput,
    unit: "runs/s",
    p50: sql.p50,
    p99: sql.p99,
    ...(sqlSplit === undefined ? {} : { split: sqlSplit }),
    note: `Baton's statements of one lifecycle, without HTTP and Baton; ${LIFECYCLE_ROUNDS} rounds in turn with the API's`
  })
  const boss = await pgBossLifecycle(databaseUrl, options.workers)
  let bossResult: LoadResult
  try {
    bossResult = await closedLoop(options.workers, seconds, boss.lifecycle)
  } finally {
    await boss.stop()
  }
  record({
    scenario: `baseline: pg-boss send/fetch/complete (${options.workers} workers)`,
    throughput: bossResult.throughput,
    unit: "jobs/s",
    p50: bossResult.p50,
    p99: bossResult.p99,
    note: "pg-boss 10 on the same database"
  })
  const ratio = baton.throughput / sql.throughput
  record({
    scenario: `run lifecycle via API (${options.workers} workers)`,
    throughput: baton.throughput,
    unit: "runs/s",
    p50: baton.p50,
    p99: baton.p99,
    rssMiB: rssOf(server),
    cpuMsPerOp,
    ...(batonSplit === undefined ? {} : { split: batonSplit }),
    versus: "lifecycle SQL",
    ratio,
    // The two targets apart: one cell joining them read NOT MET for a lifecycle at 60% of its SQL.
    ...target(ratio >= 0.6, ">= 60% of SQL"),
    note: `${((baton.throughput / bossResult.throughput) * 100).toFixed(0)}% of pg-boss (target > pg-boss ${
      baton.throughput > bossResult.throughput ? "met" : "NOT MET"
    }); create, poll, Pending, Running, Completed = 5 requests; the rounds against their SQL's: ${roundRatios.join(", ")}; ${warm}`
  })
  if (!options.embedded) await twoReplicas(baton.throughput, setup, server)
  if (!options.embedded) await twoWorkers(baton.throughput, setup)
}

/** Background task runs created through one server, delivered to task workers on two servers. */
const backgroundTasks = async () => {
  const port = options.port + 3
  const second = await startServer({
    home: fs.mkdtempSync(path.join(os.tmpdir(), "baton-bench-tasks-")),
    port,
    ...(options.embedded ? {} : { databaseUrl }),
    env: { BATON_SERVER_SERVICES_SCHEDULER_ENABLED: "false" },
    nodeArgs: options.nodeArgs,
    stdio: "inherit",
    timeoutMs: 120_000
  })
  try {
    const apis = [`http://127.0.0.1:${options.port}/v2/api`, `http://127.0.0.1:${port}/v2/api`]
    const result = await backgroundTaskDelivery(apis, quick ? 200 : 1000)
    record({
      scenario: `background task delivery, 2 workers on 2 servers (${result.runs} runs)`,
      throughput: result.throughput,
      unit: "runs/s",
      p50: result.p50,
      p99: result.p99,
      ...target(result.delivered === result.runs && result.duplicates === 0, "each run once"),
      note: `creation request to delivery; ${result.delivered} delivered, ${result.duplicates} twice`
    })
  } finally {
    await second.stop()
  }
}

/** The parent process of `pid` (from /proc: the bench runs its servers on this machine). */
const parentOf = (pid: number): number | undefined => {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
    return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1])
  } catch {
    return undefined
  }
}

/**
 * Runs the lifecycle through `clients` (worker i through clients[i % n]) after a warm-up as the
 * one-process row's, until their CPU per lifecycle settles (each process compiles its own code, on
 * its share of the requests); the CPU of `pids` per lifecycle.
 */
const measuredLifecycle = async (
  clients: ReadonlyArray<JsonClient>,
  setup: Awaited<ReturnType<typeof setUpLifecycle>>,
  pids: () => ReadonlyArray<number>,
  processes: number
) => {
  const drive = (worker: number) => apiLifecycle(clients[worker % clients.length]!, setup)(worker)
  const cpu = () => pids().reduce((sum, pid) => sum + cpuTime(pid), 0)
  const warm = await warmUp(drive, cpu, processes, options.seconds * 1.5, 150 * processes)
  const measured = pids()
  const before = measured.map(cpuTime)
  const result = await closedLoop(options.workers, options.seconds * 1.5, drive)
  const used = measured.map((pid, i) => cpuTime(pid) - before[i]!)
  // Each process's share, for the note: a process that served little shows.
  const each = used.map((ms) => (ms / result.count).toFixed(2)).join(" + ")
  return { result, cpuMsPerOp: used.reduce((sum, ms) => sum + ms, 0) / result.count, warm: `${warm}; CPU ms/op ${each}` }
}

/** The same lifecycle through two full servers on the same PostgreSQL, the workers split between them. */
const twoReplicas = async (oneReplica: number, setup: Awaited<ReturnType<typeof setUpLifecycle>>, first: StartedServer) => {
  const second = await secondServer("replica")
  try {
    const clients = [jsonClient(`http://127.0.0.1:${options.port}/v2/api`), jsonClient(`http://127.0.0.1:${secondPort}/v2/api`)]
    const { result: both, cpuMsPerOp, warm } = await measuredLifecycle(clients, setup, () => [first.pid, second.pid], 2)
    record({
      scenario: `run lifecycle via API, 2 replicas (${options.workers} workers)`,
      throughput: both.throughput,
      unit: "runs/s",
      p50: both.p50,
      p99: both.p99,
      cpuMsPerOp,
      versus: "1 replica",
      ratio: both.throughput / oneReplica,
      note: `two full servers on one PostgreSQL, each worker through one of them; CPU of both; ${warm}`
    })
  } finally {
    await second.stop()
  }
}

/**
 * The same lifecycle through one server of two worker processes (`baton server start --workers 2`)
 * on the same PostgreSQL; the one-process server stays up beside it, idle.
 */
const twoWorkers = async (oneWorker: number, setup: Awaited<ReturnType<typeof setUpLifecycle>>) => {
  const port = options.port + 4
  const cluster = await startServer({
    home: fs.mkdtempSync(path.join(os.tmpdir(), "baton-bench-workers-")),
    port,
    databaseUrl,
    args: ["--workers", "2"],
    env: { BATON_SERVER_SERVICES_SCHEDULER_ENABLED: "false" },
    nodeArgs: options.nodeArgs,
    stdio: "inherit",
    timeoutMs: 120_000
  })
  try {
    // /health answers once the first worker serves: wait until both of the primary's workers are listed.
    const api = jsonClient(`http://127.0.0.1:${port}/v2/api`)
    const workers = async () =>
      ((await api.get("/admin/instances")) as Array<{ pid: number }>).map((i) => i.pid).filter((pid) => parentOf(pid) === cluster.pid)
    const deadline = performance.now() + 60_000
    let pids = await workers()
    while (pids.length < 2 && performance.now() < deadline) {
      await sleep(200)
      pids = await workers()
    }
    if (pids.length < 2) throw new Error(`--workers 2: ${pids.length} worker(s) listed after 60 s`)
    // The load's connections opened now that both workers serve, so the primary hands them out to both.
    const agent = keepAliveAgent()
    const { result, cpuMsPerOp, warm } = await measuredLifecycle(
      [jsonClient(`http://127.0.0.1:${port}/v2/api`, agent)],
      setup,
      () => [cluster.pid, ...pids],
      2
    ).finally(() => agent.destroy())
    record({
      scenario: `run lifecycle via API, --workers 2 (${options.workers} workers)`,
      throughput: result.throughput,
      unit: "runs/s",
      p50: result.p50,
      p99: result.p99,
      cpuMsPerOp,
      versus: "--workers 1",
      ratio: result.throughput / oneWorker,
      note: `one server of two worker processes sharing the port, on one PostgreSQL; CPU of the primary and both workers; ${warm}`
    })
  } finally {
    await cluster.stop()
  }
}

/** Events a second both ingestion paths are paced at to measure the persistence lag below saturation. */
const PACED_EVENTS = 2000

/** The 1-minute load average, for the notes: a shared machine's figures depend on it. */
const load = () => os.loadavg()[0]!.toFixed(1)

/**
 * Event ingestion through POST /events and through the /events/in websocket: after 2 s of each to
 * warm up, the rate events are stored at when clients send as fast as they can (--event-rounds
 * times, the paths taking turns to go first), with the server's CPU time per 1000 events (which
 * does not depend on what else runs on the machine), then the persistence lag at a steady
 * PACED_EVENTS.
 */
const events = async (server: StartedServer, apiUrl: string) => {
  const lag = (r: IngestionResult) =>
    `p50 ${r.lagP50.toFixed(0)} ms, p99 ${r.lagP99.toFixed(0)} ms${r.lost > 0 ? `, ${r.lost} probes never stored` : ""}`
  const measured = async (ingest: () => Promise<IngestionResult>) => {
    const loadBefore = load()
    const cpuBefore = cpuTime(server.pid)
    const result = await ingest()
    const cpuMsPer1000 = (cpuTime(server.pid) - cpuBefore) / (result.events / 1000)
    return { result, cpuMsPer1000, loadBefore, loadAfter: load() }
  }
  // Unrecorded, so that the first round does not pay for compiling the code either path runs.
  await ingestByPost(apiUrl, 2)
  await ingestByWebsocket(apiUrl, 2)
  for (let round = 1; round <= options.eventRounds; round++) {
    const post = () => measured(() => ingestByPost(apiUrl, options.seconds))
    const socket = () => measured(() => ingestByWebsocket(apiUrl, options.seconds))
    const postFirst = round % 2 === 1
    const posted = postFirst ? await post() : undefined
    const streamed = await socket()
    const postedAfter = posted ?? await post()
    const suffix = options.eventRounds > 1 ? `, round ${round}${postFirst ? "" : " (websocket first)"}` : ""
    record({
      scenario: `POST /events (batches of 50, 10 clients), stored${suffix}`,
      throughput: postedAfter.result.throughput,
      unit: "events/s",
      rssMiB: rssOf(server),
      cpuMsPerOp: postedAfter.cpuMsPer1000,
      note: `CPU ms per 1000 events; lag at saturation ${lag(postedAfter.result)}; ${postedAfter.result.events} events; load ${postedAfter.loadBefore} → ${postedAfter.loadAfter}`
    })
    const s = streamed.result
    record({
      scenario: `/events/in websocket (one event per message, 10 clients), stored${suffix}`,
      throughput: s.throughput,
      unit: "events/s",
      rssMiB: rssOf(server),
      cpuMsPerOp: streamed.cpuMsPer1000,
      versus: "POST /events",
      ratio: s.throughput / postedAfter.result.throughput,
      ...target(s.throughput >= postedAfter.result.throughput && s.lost === 0, ">= POST /events, none lost"),
      note: `CPU ms per 1000 events (${((streamed.cpuMsPer1000 / postedAfter.cpuMsPer1000) * 100).toFixed(0)}% of POST's); lag at saturation ${lag(s)} (clients sent at ${s.sendRate.toFixed(0)}/s); ${s.events} events; load ${streamed.loadBefore} → ${streamed.loadAfter}`
    })
  }
  const postedPaced = await ingestByPost(apiUrl, options.seconds, PACED_EVENTS)
  record({
    scenario: `POST /events, ${PACED_EVENTS} events/s: persistence lag`,
    p50: postedPaced.lagP50,
    p99: postedPaced.lagP99,
    ...target(postedPaced.lost === 0, "none lost"),
    note: `${postedPaced.events} events; load ${load()}`
  })
  const streamedPaced = await ingestByWebsocket(apiUrl, options.seconds, PACED_EVENTS)
  record({
    scenario: `/events/in, ${PACED_EVENTS} events/s: persistence lag`,
    p50: streamedPaced.lagP50,
    p99: streamedPaced.lagP99,
    ...target(streamedPaced.lost === 0, "none lost"),
    note: `${streamedPaced.events} events; load ${load()}`
  })
}

/** Time from a run's scheduled time to its Pending state, for a polling worker and a held poll. */
const workerLatency = async (server: StartedServer, api: JsonClient) => {
  const setup = await setUpLifecycle(api, 2)
  const held = await api.send("POST", `/work_pools/${setup.pool}/get_scheduled_flow_runs`, { wait_seconds: 61 })
  const holds = held.status === 422
  const measureMode = async (
    queueIndex: number,
    poll: (queue: string) => Promise<Array<{ flow_run: { id: string; state: any } }>>,
    runs: number,
    pause = 0
  ) => {
    const queue = setup.queues[queueIndex]!.name
    const latencies: Array<number> = []
    let done = false
    const worker = (async () => {
      while (!done) {
        for (const { flow_run } of await poll(queue)) {
          const scheduled = new Date(flow_run.state.state_details.scheduled_time).getTime()
          await api.post(`/flow_runs/${flow_run.id}/set_state`, { state: { type: "PENDING" } })
          latencies.push(Date.now() - scheduled)
        }
        if (pause > 0) await sleep(pause)
      }
    })()
    for (let i = 0; i < runs; i++) {
      await sleep(700 + Math.random() * 1500)
      await api.post(`/deployments/${setup.deploymentId}/create_flow_run`, { work_queue_name: queue })
    }
    const deadline = Date.now() + 15_000
    while (latencies.length < runs && Date.now() < deadline) await sleep(50)
    done = true
    await worker.catch(() => undefined)
    return latencies
  }
  const runs = quick ? 5 : 10
  // A worker's loop: poll, submit what came, sleep the polling interval.
  const polling = await measureMode(0, (queue) =>
    api.post(`/work_pools/${setup.pool}/get_scheduled_flow_runs`, { work_queue_names: [queue] }), runs, 10_000)
  record({
    scenario: "worker latency: polling every 10 s",
    p50: percentile(polling, 50),
    p99: percentile(polling, 99),
    rssMiB: rssOf(server),
    note: `${polling.length} runs; scheduled time to Pending`
  })
  if (!holds) {
    record({ scenario: "worker latency: held poll", note: "this server has no wait_seconds" })
    return
  }
  const heldLatencies = await measureMode(1, (queue) =>
    api.post(`/work_pools/${setup.pool}/get_scheduled_flow_runs`, { work_queue_names: [queue], wait_seconds: 30 }), runs)
  record({
    scenario: "worker latency: held poll (wait_seconds 30)",
    p50: percentile(heldLatencies, 50),
    p99: percentile(heldLatencies, 99),
    rssMiB: rssOf(server),
    note: `${heldLatencies.length} runs; scheduled time to Pending`
  })
}

/** `deployments` interval deployments, then a services process; time until every run is there. */
const scheduler = async (api: JsonClient) => {
  const flow = await api.post("/flows/", { name: `bench-scheduler-${Date.now()}` })
  const ids: Array<string> = []
  const queue = Array.from({ length: options.deployments }, (_, i) => i)
  await Promise.all(
    Array.from({ length: 20 }, async () => {
      for (let i = queue.shift(); i !== undefined; i = queue.shift()) {
        const deployment = await api.post("/deployments/", {
          name: `scheduled-${i}`,
          flow_id: flow.id,
          schedules: [{ schedule: { interval: 3600 }, active: true }]
        })
        ids.push(deployment.id)
      }
    })
  )
  const count = async () => (await api.post("/flow_runs/count", { flows: { id: { any_: [flow.id] } } })) as number
  // As a user starts it: bin/baton.mjs run as a command (its first lines set the environment, then run node).
  const services = spawn(path.join(ROOT, "bin/baton.mjs"), ["server", "services", "start"], {
    cwd: ROOT,
    env: {
      ...process.env,
      BATON_SERVER_DATABASE_CONNECTION_URL: databaseUrl,
      BATON_SERVER_SERVICES_SCHEDULER_ENABLED: "true"
    },
    stdio: "ignore"
  })
  const spawned = performance.now()
  let first: number | undefined
  let last = 0
  let lastChange = performance.now()
  try {
    for (;;) {
      await sleep(200)
      const n = await count()
      if (n > 0 && first === undefined) first = performance.now()
      if (n !== last) {
        last = n
        lastChange = performance.now()
      }
      if (n > 0 && performance.now() - lastChange > 5_000) break
      if (performance.now() - spawned > 180_000) break
    }
  } finally {
    services.kill("SIGTERM")
  }
  const total = (lastChange - spawned) / 1000
  record({
    scenario: `scheduler: ${options.deployments} deployments`,
    throughput: last / total,
    unit: "runs/s",
    note: `${last} runs; all there ${total.toFixed(1)} s after the services process started (first after ${(((first ?? spawned) - spawned) / 1000).toFixed(1)} s); loop is 60 s`,
    ...target(total < 60, "within one 60 s loop")
  })
}

/** Filter, count and history over `runs` seeded runs, one request after the other. */
const queries = async (server: StartedServer, apiUrl: string) => {
  let runCount = options.runs
  if (options.seeded) {
    runCount = await seededRuns()
    if (runCount === 0) throw new Error(`--seeded: ${options.database} has no runs (seed it with scripts/bench/seed.ts)`)
    if (Math.abs(runCount - options.runs) > options.runs * 0.05) {
      console.log(`note: --runs ${options.runs}, but ${options.database} holds ${runCount} runs; the rows say what it holds`)
    }
    record({ scenario: `${runCount} runs already seeded in ${options.database}`, note: "--seeded: not seeded again" })
  } else {
    const seeded = performance.now()
    await seedRuns(databaseUrl, { runs: options.runs })
    record({ scenario: `seed ${options.runs} runs (seed.ts)`, note: `${((performance.now() - seeded) / 1000).toFixed(0)} s, multi-row INSERT … SELECT` })
  }
  // The goal over a million runs; over more (10M), twice that.
  const goal = runCount > 1_100_000 ? 100 : 50
  const client = jsonClient(apiUrl)
  for (const c of await queryCases(apiUrl)) {
    const times: Array<number> = []
    for (let i = 0; i < 5; i++) await client.post(c.route, c.body)
    const until = performance.now() + 10_000
    while (times.length < 100 && performance.now() < until) {
      const t = performance.now()
      await client.post(c.route, c.body)
      times.push(performance.now() - t)
    }
    const p99 = percentile(times, 99)
    record({
      scenario: `${c.route.slice(1)}: ${c.name}`,
      p50: percentile(times, 50),
      p99,
      rssMiB: rssOf(server),
      ...target(p99 < goal, `p99 < ${goal} ms`),
      note: `${times.length} requests over ${(runCount / 1e6).toFixed(1)}M runs`
    })
  }
}

/** The lifecycle for `minutes`, with the server's RSS sampled every 10 s. */
export const soak = async (server: StartedServer, api: JsonClient, minutes: number, workers: number) => {
  const setup = await setUpLifecycle(api, workers)
  const samples: Array<{ at: number; rssMiB: number }> = []
  const started = performance.now()
  const every = Math.min(10_000, (minutes * 60_000) / 12)
  const sampler = setInterval(() => samples.push({ at: (performance.now() - started) / 1000, rssMiB: rssOf(server) }), every)
  let result: LoadResult
  try {
    result = await closedLoop(workers, minutes * 60, apiLifecycle(api, setup))
  } finally {
    clearInterval(sampler)
  }
  // Growth: the last quarter's mean against the second quarter's (after warm-up).
  const quarter = Math.max(1, Math.floor(samples.length / 4))
  const mean = (xs: ReadonlyArray<{ rssMiB: number }>) => xs.reduce((a, s) => a + s.rssMiB, 0) / Math.max(1, xs.length)
  const early = mean(samples.slice(quarter, 2 * quarter))
  const late = mean(samples.slice(-quarter))
  return { result, samples, early, late, growth: late - early }
}

/**
 * A server on an embedded database of its own (own home, own port), measured after the main server
 * has stopped so the two do not share the cores: idle RSS, then the lifecycle with RSS each second.
 */
const embedded = async () => {
  const embeddedOptions = { port: options.port + 5, workers: options.workers, seconds: options.embeddedSeconds, settleSeconds: 30 }
  for (const row of embeddedRows(await embeddedBench(embeddedOptions), embeddedOptions)) record(row)
}

const main = async () => {
  const started = performance.now()
  console.log(`Baton bench on ${JSON.stringify(machine())}`)
  console.log(`options ${JSON.stringify(options)}`)
  if (options.seeded) console.log(`--seeded: ${options.database} is used as it is`)
  else await freshDatabase()
  const home = fs.mkdtempSync(path.join(os.tmpdir(), "baton-bench-"))
  const server = await startServer({
    home,
    port: options.port,
    ...(options.embedded ? {} : { databaseUrl }),
    env: { BATON_SERVER_SERVICES_SCHEDULER_ENABLED: "false" },
    nodeArgs: options.nodeArgs,
    stdio: "inherit",
    timeoutMs: 120_000
  })
  const apiUrl = `http://127.0.0.1:${options.port}/v2/api`
  const api = jsonClient(apiUrl)
  try {
    await sleep(3000)
    const idle = rssOf(server)
    record({ scenario: "server idle after start", rssMiB: idle, ...target(idle < 150, "RSS < 150 MiB"), note: options.embedded ? "embedded database" : "PostgreSQL" })
    if (runs("health")) await health(server, apiUrl)
    if (runs("create")) await create(server, api, apiUrl)
    if (runs("lifecycle")) await lifecycle(server, api)
    if (runs("events")) await events(server, apiUrl)
    if (runs("workers")) await workerLatency(server, api)
    if (!options.embedded && runs("tasks")) await backgroundTasks()
    if (!options.embedded && runs("scheduler")) await scheduler(api)
    if (options.soakMinutes > 0 && runs("soak")) {
      const soaked = await soak(server, api, options.soakMinutes, options.workers)
      record({
        scenario: `lifecycle soak, ${options.soakMinutes} min`,
        throughput: soaked.result.throughput,
        unit: "runs/s",
        p50: soaked.result.p50,
        p99: soaked.result.p99,
        rssMiB: rssOf(server),
        ...target(soaked.growth < 10, "no RSS growth"),
        note: `RSS ${soaked.early.toFixed(0)} → ${soaked.late.toFixed(0)} MiB (2nd vs last quarter); npm run bench:soak runs 10 min`
      })
    }
    if (!options.embedded && runs("queries")) await queries(server, apiUrl)
    else if (runs("queries")) record({ scenario: "flow-run queries over 1M runs", note: "PostgreSQL only (run without --embedded)" })
  } finally {
    await server.stop()
  }
  if (runs("embedded")) await embedded()
  if (!runs("startup")) return finish(started)
  const startupHome = fs.mkdtempSync(path.join(os.tmpdir(), "baton-bench-startup-"))
  const startup = await startupReport({ home: startupHome, port: options.port + 1, runs: 3, idleSeconds: 3 })
  const startupMs = percentile(startup.starts.map((s) => s.startupMs), 50)
  const embeddedRss = percentile(startup.starts.map((s) => s.idleRssMiB), 50)
  record({
    scenario: "start-up, existing embedded database",
    p50: startupMs,
    rssMiB: embeddedRss,
    ...target(startupMs < 2000, "< 2000 ms"),
    note: `spawn to first 200 from /health; median of 3 (first start, migrating: ${startup.firstStartMs.toFixed(0)} ms); RSS idle, embedded`
  })
  finish(started)
}

const finish = (started: number) => {
  const seconds = (performance.now() - started) / 1000
  console.log(`\n${table(rows)}\n\nbench took ${(seconds / 60).toFixed(1)} min`)
  const file = save({ machine: machine(), options, seconds, rows })
  console.log(`results: ${path.relative(ROOT, file)}`)
}

const isMain = process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)
if (isMain) {
  main().then(
    () => process.exit(0),
    (error) => {
      console.error(error)
      if (rows.length > 0) {
        console.log(`\npartial results:\n${table(rows)}`)
        // Saved too, so that the rows measured before the failure can be named like any run's.
        const file = save({ machine: machine(), options, failed: String(error), rows })
        console.log(`results (partial): ${path.relative(ROOT, file)}`)
      }
      process.exit(1)
    }
  )
}
