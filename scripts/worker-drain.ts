/**
 * A worker written with plain HTTP drains a pool: starts Baton (embedded database in a temporary
 * home, or BATON_SERVER_DATABASE_CONNECTION_URL), creates a pool with three queues of different
 * priorities and RUNS scheduled runs spread over them, then loops heartbeat → poll → Pending →
 * Running → Completed until the pool is empty. Checks that every run completed once and that no run
 * of a queue was handed out while a higher-priority queue still had due runs; prints the timings.
 *
 *   npm run drain -- [runs=1000] [batch=50]
 */
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"

const runs = Number(process.argv[2] ?? 1000)
const batch = Number(process.argv[3] ?? 50)
const port = 4300 + Math.floor(Math.random() * 500)
const api = `http://127.0.0.1:${port}/v2/api`
const home = fs.mkdtempSync(path.join(os.tmpdir(), "baton-drain-"))

const call = async (method: string, route: string, body?: unknown) => {
  const response = await fetch(api + route, {
    method,
    headers: body === undefined ? {} : { "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  const text = await response.text()
  if (response.status >= 400) throw new Error(`${method} ${route}: ${response.status} ${text}`)
  return text === "" ? null : JSON.parse(text)
}

const server = spawn(process.execPath, ["--import", "tsx", "src/main.ts", "server", "start", "--no-services"], {
  env: { ...process.env, BATON_HOME: home, BATON_SERVER_API_PORT: String(port), BATON_LOGGING_LEVEL: "WARNING" },
  stdio: "inherit"
})

const stop = () => {
  server.kill("SIGTERM")
  fs.rmSync(home, { recursive: true, force: true })
}

const main = async () => {
  for (let i = 0; ; i++) {
    try {
      await call("GET", "/health")
      break
    } catch {
      if (i > 100) throw new Error("server did not start")
      await new Promise((resolve) => setTimeout(resolve, 200))
    }
  }
  await call("POST", "/work_pools/", { name: "drain", type: "process" })
  const queues = ["high", "middle", "low"]
  for (const [i, name] of queues.entries()) await call("POST", "/work_pools/drain/queues", { name, priority: i + 1 })
  const flow = await call("POST", "/flows/", { name: "drained" })
  const past = Date.now() - 60_000
  const started = Date.now()
  for (let i = 0; i < runs; i++) {
    await call("POST", "/flow_runs/", {
      flow_id: flow.id,
      work_pool_name: "drain",
      work_queue_name: queues[i % 3],
      state: { type: "SCHEDULED", state_details: { scheduled_time: new Date(past + i).toISOString() } }
    })
  }
  const created = Date.now()

  const done = new Set<string>()
  const order: Array<string> = []
  while (true) {
    await call("POST", "/work_pools/drain/workers/heartbeat", { name: "drainer", heartbeat_interval_seconds: 30 })
    const due: Array<{ work_queue_id: string; flow_run: { id: string; work_queue_name: string } }> = await call(
      "POST",
      "/work_pools/drain/get_scheduled_flow_runs",
      { scheduled_before: new Date().toISOString(), limit: batch }
    )
    if (due.length === 0) break
    for (const { flow_run } of due) {
      for (const type of ["PENDING", "RUNNING", "COMPLETED"]) {
        const result = await call("POST", `/flow_runs/${flow_run.id}/set_state`, { state: { type } })
        if (result.status !== "ACCEPT") throw new Error(`${flow_run.id} → ${type}: ${JSON.stringify(result)}`)
      }
      if (done.has(flow_run.id)) throw new Error(`run ${flow_run.id} was handed out twice`)
      done.add(flow_run.id)
      order.push(flow_run.work_queue_name)
    }
  }
  const drained = Date.now()

  // Priorities: once a lower-priority queue's run was handed out, no higher one's may follow.
  const rank = (name: string) => queues.indexOf(name)
  const inversions = order.filter((name, i) => i > 0 && rank(name) < rank(order[i - 1]!)).length
  const completed = await call("POST", "/flow_runs/count", { flow_runs: { state: { type: { any_: ["COMPLETED"] } } } })
  console.log(`created ${runs} runs in ${((created - started) / 1000).toFixed(1)} s`)
  console.log(`drained ${done.size} runs in ${((drained - created) / 1000).toFixed(1)} s (${(done.size / ((drained - created) / 1000)).toFixed(0)} runs/s, 4 requests per run)`)
  console.log(`completed: ${completed}; priority inversions: ${inversions}`)
  if (done.size !== runs || completed !== runs || inversions !== 0) throw new Error("the pool was not drained in priority order")
}

main().then(
  () => {
    stop()
    process.exit(0)
  },
  (error) => {
    console.error(error)
    stop()
    process.exit(1)
  }
)
