/**
 * Latency of the flow-run queries a UI and clients send (POST /flow_runs/filter, /count, /history),
 * through the HTTP API of a running server: each query `--requests` times one after the other (after
 * `--warmup` unmeasured ones), p50/p99/max in milliseconds per query.
 *
 *   npx tsx scripts/bench/flow-run-queries.ts --api http://127.0.0.1:4311/v2/api [--requests 200] [--warmup 20]
 *     [--compare http://127.0.0.1:4313/v2/api] [--only "history"] [--json results.json]
 *
 * With --compare, a second server (e.g. the previous build on a copy of the same database) answers
 * the same queries, its requests interleaved with the first's so both see the same machine load.
 *
 * Meant for a database seeded by scripts/bench/seed.ts (runs over the last 60 days). The flow,
 * deployment, queue and tag filtered on are taken from the newest run that has a deployment; the
 * busiest flow and deployment are looked up too.
 */
import * as fs from "node:fs"
import { fileURLToPath } from "node:url"

export interface QueryCase {
  readonly name: string
  readonly route: "/flow_runs/filter" | "/flow_runs/count" | "/flow_runs/history"
  readonly body: unknown
}

export interface QueryResult {
  readonly name: string
  readonly api: string
  readonly p50: number
  readonly p99: number
  readonly max: number
  readonly answer: string
}

const post = async (api: string, route: string, body: unknown) => {
  const response = await fetch(api + route, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body)
  })
  const text = await response.text()
  if (response.status !== 200) throw new Error(`${route}: ${response.status} ${text.slice(0, 500)}`)
  return text
}

/** The queries, with ids picked from the seeded data. */
export const queryCases = async (api: string, at = new Date()): Promise<ReadonlyArray<QueryCase>> => {
  const [sample] = JSON.parse(
    await post(api, "/flow_runs/filter", {
      limit: 1,
      sort: "EXPECTED_START_TIME_DESC",
      flow_runs: { deployment_id: { is_null_: false }, tags: { is_null_: false } }
    })
  ) as Array<{ flow_id: string; deployment_id: string; work_queue_name: string; tags: Array<string> }>
  if (sample === undefined) throw new Error("No run with a deployment and tags: seed the database first")
  const busiest = async (route: string, key: "flows" | "deployments") => {
    let best = { id: "", runs: -1 }
    for (let offset = 0; ; offset += 200) {
      const page = JSON.parse(await post(api, route, { limit: 200, offset })) as Array<{ id: string }>
      for (const { id } of page) {
        const runs = Number(await post(api, "/flow_runs/count", { [key]: { id: { any_: [id] } } }))
        if (runs > best.runs) best = { id, runs }
      }
      if (page.length < 200) return best.id
    }
  }
  const busiestFlow = await busiest("/flows/filter", "flows")
  const busiestDeployment = await busiest("/deployments/filter", "deployments")
  const days = (n: number) => new Date(at.getTime() - n * 86_400_000).toISOString()
  const hour = new Date(Math.floor(at.getTime() / 3_600_000) * 3_600_000 + 3_600_000)
  const day = new Date(Math.floor(at.getTime() / 86_400_000) * 86_400_000 + 86_400_000)
  const failed = { state: { type: { any_: ["FAILED", "CRASHED"] } } }
  return [
    { name: "filter default sort (ID_DESC), limit 200", route: "/flow_runs/filter", body: { limit: 200 } },
    { name: "filter EXPECTED_START_TIME_DESC, limit 200", route: "/flow_runs/filter", body: { limit: 200, sort: "EXPECTED_START_TIME_DESC" } },
    { name: "filter START_TIME_DESC, limit 200", route: "/flow_runs/filter", body: { limit: 200, sort: "START_TIME_DESC" } },
    {
      name: "filter state any_ [FAILED, CRASHED], EXPECTED_START_TIME_DESC",
      route: "/flow_runs/filter",
      body: { limit: 200, sort: "EXPECTED_START_TIME_DESC", flow_runs: failed }
    },
    {
      name: "filter state any_ [FAILED, CRASHED], START_TIME_DESC",
      route: "/flow_runs/filter",
      body: { limit: 200, sort: "START_TIME_DESC", flow_runs: failed }
    },
    {
      name: "filter flows.id any_ [flow], START_TIME_DESC",
      route: "/flow_runs/filter",
      body: { limit: 200, sort: "START_TIME_DESC", flows: { id: { any_: [sample.flow_id] } } }
    },
    {
      name: "filter flows.id any_ [busiest flow], EXPECTED_START_TIME_DESC",
      route: "/flow_runs/filter",
      body: { limit: 200, sort: "EXPECTED_START_TIME_DESC", flows: { id: { any_: [busiestFlow] } } }
    },
    {
      name: "filter deployment_id any_ [busiest deployment], START_TIME_DESC",
      route: "/flow_runs/filter",
      body: { limit: 200, sort: "START_TIME_DESC", flow_runs: { deployment_id: { any_: [busiestDeployment] } } }
    },
    {
      name: "filter state any_ [FAILED, CRASHED], ID_DESC",
      route: "/flow_runs/filter",
      body: { limit: 200, flow_runs: failed }
    },
    {
      name: "filter deployment_id any_ [deployment], START_TIME_DESC",
      route: "/flow_runs/filter",
      body: { limit: 200, sort: "START_TIME_DESC", flow_runs: { deployment_id: { any_: [sample.deployment_id] } } }
    },
    {
      name: "filter deployments.id any_ [deployment], EXPECTED_START_TIME_DESC",
      route: "/flow_runs/filter",
      body: { limit: 200, sort: "EXPECTED_START_TIME_DESC", deployments: { id: { any_: [sample.deployment_id] } } }
    },
    {
      name: "filter work_queue_name any_ [queue], START_TIME_DESC",
      route: "/flow_runs/filter",
      body: { limit: 200, sort: "START_TIME_DESC", flow_runs: { work_queue_name: { any_: [sample.work_queue_name] } } }
    },
    {
      name: "filter tags any_ [tag], START_TIME_DESC",
      route: "/flow_runs/filter",
      body: { limit: 200, sort: "START_TIME_DESC", flow_runs: { tags: { any_: [sample.tags[0]] } } }
    },
    { name: "count, no filter", route: "/flow_runs/count", body: {} },
    {
      name: "count state any_ [FAILED, CRASHED], last 7 days",
      route: "/flow_runs/count",
      body: { flow_runs: { ...failed, expected_start_time: { after_: days(7), before_: at.toISOString() } } }
    },
    {
      name: "count state any_ [FAILED, CRASHED], last 30 days",
      route: "/flow_runs/count",
      body: { flow_runs: { ...failed, expected_start_time: { after_: days(30), before_: at.toISOString() } } }
    },
    {
      name: "count state any_ [COMPLETED], last 30 days",
      route: "/flow_runs/count",
      body: { flow_runs: { state: { type: { any_: ["COMPLETED"] } }, expected_start_time: { after_: days(30), before_: at.toISOString() } } }
    },
    {
      name: "count expected_start_time after_ 7 days ago",
      route: "/flow_runs/count",
      body: { flow_runs: { expected_start_time: { after_: days(7) } } }
    },
    {
      name: "history 30 days, 1-day intervals",
      route: "/flow_runs/history",
      body: { history_start: new Date(day.getTime() - 30 * 86_400_000).toISOString(), history_end: day.toISOString(), history_interval_seconds: 86400 }
    },
    {
      name: "history 1 day, 1-hour intervals",
      route: "/flow_runs/history",
      body: { history_start: new Date(hour.getTime() - 86_400_000).toISOString(), history_end: hour.toISOString(), history_interval_seconds: 3600 }
    },
    {
      name: "history 30 days to now (start not on the hour), 1-day intervals",
      route: "/flow_runs/history",
      body: { history_start: days(30), history_end: at.toISOString(), history_interval_seconds: 86400 }
    },
    {
      name: "history 1 day to now (start not on the hour), 1-hour intervals",
      route: "/flow_runs/history",
      body: { history_start: days(1), history_end: at.toISOString(), history_interval_seconds: 3600 }
    },
    {
      name: "history 30 days, 1-day intervals, expected_start_time and state filter",
      route: "/flow_runs/history",
      body: {
        history_start: days(30),
        history_end: at.toISOString(),
        history_interval_seconds: 86400,
        flow_runs: { expected_start_time: { after_: days(30), before_: at.toISOString() }, ...failed }
      }
    },
    {
      name: "history 30 days, 1-day intervals, deployment_id",
      route: "/flow_runs/history",
      body: {
        history_start: new Date(day.getTime() - 30 * 86_400_000).toISOString(),
        history_end: day.toISOString(),
        history_interval_seconds: 86400,
        flow_runs: { deployment_id: { any_: [sample.deployment_id] } }
      }
    },
    {
      name: "history 30 days, 1-day intervals, busiest deployment",
      route: "/flow_runs/history",
      body: {
        history_start: new Date(day.getTime() - 30 * 86_400_000).toISOString(),
        history_end: day.toISOString(),
        history_interval_seconds: 86400,
        flow_runs: { deployment_id: { any_: [busiestDeployment] } }
      }
    },
    {
      name: "count deployment_id any_ [busiest deployment]",
      route: "/flow_runs/count",
      body: { flow_runs: { deployment_id: { any_: [busiestDeployment] } } }
    }
  ]
}

/**
 * An answer without what depends on the moment it was computed (a running run's run time, a late
 * run's lateness, their sums in a history), states in a history in one order: two servers' answers
 * to one query must then be equal.
 */
const comparable = (route: QueryCase["route"], text: string) => {
  const value = JSON.parse(text) as unknown
  if (route === "/flow_runs/filter") {
    return JSON.stringify((value as Array<Record<string, unknown>>).map(({ estimated_run_time: _, estimated_start_time_delta: __, ...run }) => run))
  }
  if (route === "/flow_runs/history") {
    return JSON.stringify(
      (value as Array<{ interval_start: string; interval_end: string; states: Array<Record<string, unknown>> }>).map((bucket) => ({
        ...bucket,
        states: bucket.states
          .map((s) => `${s.state_type}/${s.state_name}/${s.count_runs}`)
          .sort()
      }))
    )
  }
  return text
}

const percentile = (sorted: ReadonlyArray<number>, p: number) =>
  sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!

/**
 * Runs each case `requests` times on every api, the apis' requests interleaved, and reports each
 * api's latencies per case.
 */
export const measure = async (
  apis: ReadonlyArray<string>,
  cases: ReadonlyArray<QueryCase>,
  options: { readonly requests: number; readonly warmup: number }
): Promise<ReadonlyArray<QueryResult>> => {
  const results: Array<QueryResult> = []
  for (const c of cases) {
    const answers = apis.map(() => "")
    for (let i = 0; i < options.warmup; i++) {
      for (const [k, api] of apis.entries()) answers[k] = await post(api, c.route, c.body)
    }
    const times = apis.map(() => [] as Array<number>)
    for (let i = 0; i < options.requests; i++) {
      for (const [k, api] of apis.entries()) {
        const started = performance.now()
        await post(api, c.route, c.body)
        times[k]!.push(performance.now() - started)
      }
    }
    for (const [k, api] of apis.entries()) {
      const sorted = times[k]!.sort((a, b) => a - b)
      const parsed = JSON.parse(answers[k]!) as unknown
      const summary = Array.isArray(parsed) ? `${parsed.length} items, ${answers[k]!.length} bytes` : answers[k]!
      results.push({ name: c.name, api, p50: percentile(sorted, 50), p99: percentile(sorted, 99), max: sorted[sorted.length - 1]!, answer: summary })
    }
    if (apis.length > 1 && answers.some((answer) => comparable(c.route, answer) !== comparable(c.route, answers[0]!))) {
      results.push({ name: `${c.name} (ANSWERS DIFFER)`, api: "", p50: NaN, p99: NaN, max: NaN, answer: "" })
    }
  }
  return results
}

const argument = (name: string): string | undefined => {
  const at = process.argv.indexOf(`--${name}`)
  return at === -1 ? undefined : process.argv[at + 1]
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const api = argument("api") ?? "http://127.0.0.1:4311/v2/api"
  const compare = argument("compare")
  const requests = Number(argument("requests") ?? 200)
  const warmup = Number(argument("warmup") ?? 20)
  const only = argument("only")
  const out = argument("json")
  const run = async () => {
    const cases = (await queryCases(api)).filter((c) => only === undefined || c.name.includes(only))
    const apis = compare === undefined ? [api] : [api, compare]
    const results = await measure(apis, cases, { requests, warmup })
    const width = Math.max(...results.map((r) => r.name.length))
    const label = (url: string) => (apis.length === 1 ? "" : `${url === api ? "api" : "compare"}  `)
    console.log(`${"query".padEnd(width)}  ${apis.length === 1 ? "" : "server   "}${"p50 ms".padStart(8)}  ${"p99 ms".padStart(8)}  ${"max ms".padStart(8)}  answer`)
    for (const r of results) {
      console.log(
        `${r.name.padEnd(width)}  ${label(r.api).padEnd(apis.length === 1 ? 0 : 9)}${r.p50.toFixed(1).padStart(8)}  ${r.p99.toFixed(1).padStart(8)}  ${r.max.toFixed(1).padStart(8)}  ${r.answer.slice(0, 60)}`
      )
    }
    if (out !== undefined) fs.writeFileSync(out, JSON.stringify(results, null, 2))
  }
  run().catch((error) => {
    console.error(error)
    process.exit(1)
  })
}
