/**
 * Opens a web UI build served by Baton in headless Chromium, page after page, and reports every
 * request that failed (HTTP 4xx/5xx or no answer) and every error the page logged.
 *
 *   npm run ui:check -- --ui /path/to/ui/build [--port 4340] [--chromium /usr/bin/chromium] [--pg URL]
 *
 * It starts `baton server start` on a temporary home (the embedded database, or --pg), seeds a flow,
 * a work pool, a deployment, runs in several states with task runs and logs, a variable, a block, a
 * global concurrency limit, a tag limit and an automation, then visits the UI's main pages and the
 * detail pages of what it seeded. Exits 1 when anything failed. Needs a Chromium on the machine
 * (Debian: `apt-get install chromium`); playwright-core drives it and downloads nothing.
 */
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { chromium } from "playwright-core"

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..")

const argument = (name: string, fallback?: string): string | undefined => {
  const at = process.argv.indexOf(`--${name}`)
  return at >= 0 ? process.argv[at + 1] : fallback
}

const uiDirectory = argument("ui", process.env.BATON_SERVER_UI_STATIC_DIRECTORY)
const port = Number(argument("port", "4340"))
const executablePath = argument("chromium", "/usr/bin/chromium")!
const databaseUrl = argument("pg")
if (uiDirectory === undefined || !fs.existsSync(path.join(uiDirectory, "index.html"))) {
  console.error("ui-check: pass --ui <folder with a built UI's index.html> (or set BATON_SERVER_UI_STATIC_DIRECTORY)")
  process.exit(2)
}

const root = `http://127.0.0.1:${port}`
const api = `${root}/v2/api`

const call = async (method: string, route: string, body?: unknown): Promise<any> => {
  const response = await fetch(api + route, {
    method,
    headers: { "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  const text = await response.text()
  if (!response.ok) throw new Error(`${method} ${route}: ${response.status} ${text.slice(0, 300)}`)
  return text === "" ? null : JSON.parse(text)
}

const startServer = async (): Promise<ChildProcess> => {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), "baton-ui-check-"))
  const child = spawn(path.join(ROOT, "bin/baton.mjs"), ["server", "start"], {
    cwd: ROOT,
    stdio: ["ignore", "inherit", "inherit"],
    env: {
      ...process.env,
      BATON_HOME: home,
      BATON_SERVER_API_HOST: "127.0.0.1",
      BATON_SERVER_API_PORT: String(port),
      BATON_SERVER_UI_STATIC_DIRECTORY: uiDirectory,
      ...(databaseUrl === undefined ? {} : { BATON_SERVER_DATABASE_CONNECTION_URL: databaseUrl })
    }
  })
  for (let i = 0; i < 240; i++) {
    try {
      if ((await fetch(`${api}/health`)).ok) return child
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 250))
  }
  child.kill("SIGKILL")
  throw new Error("the server did not answer /health within 60 s")
}

/** What the pages show: one of each kind of object, and runs in several states. */
const seed = async () => {
  const flow = await call("POST", "/flows/", { name: "ui-check-flow", tags: ["ui-check"] })
  await call("POST", "/work_pools/", { name: "ui-check-pool", type: "process" })
  const deployment = await call("POST", "/deployments/", {
    name: "ui-check-deployment",
    flow_id: flow.id,
    work_pool_name: "ui-check-pool",
    schedules: [{ schedule: { interval: 3600 }, active: true }],
    parameter_openapi_schema: { type: "object", properties: { n: { type: "integer", default: 1 } } },
    tags: ["ui-check"]
  })
  const runs: Array<string> = []
  for (const final of ["COMPLETED", "FAILED", "RUNNING", null] as const) {
    const run = await call("POST", `/deployments/${deployment.id}/create_flow_run`, { parameters: { n: 2 } })
    runs.push(run.id)
    if (final === null) continue
    for (const type of ["PENDING", "RUNNING", ...(final === "RUNNING" ? [] : [final])]) {
      await call("POST", `/flow_runs/${run.id}/set_state`, { state: { type }, force: true })
    }
    const task = await call("POST", "/task_runs/", {
      flow_run_id: run.id,
      task_key: "ui-check-task",
      dynamic_key: "0",
      name: "ui-check-task-0",
      state: { type: "COMPLETED" }
    })
    await call("POST", "/logs/", [
      { name: "ui-check", level: 20, message: "hello from the ui check", timestamp: new Date().toISOString(), flow_run_id: run.id },
      { name: "ui-check", level: 20, message: "a task says hello", timestamp: new Date().toISOString(), flow_run_id: run.id, task_run_id: task.id }
    ])
  }
  await call("POST", "/variables/", { name: "ui_check_variable", value: { a: 1 } })
  const secretType = await call("GET", "/block_types/slug/secret")
  const secretSchema = (await call("POST", "/block_schemas/filter", { block_schemas: { block_type_id: { any_: [secretType.id] } } }))[0]
  const block = await call("POST", "/block_documents/", {
    name: "ui-check-secret",
    block_type_id: secretType.id,
    block_schema_id: secretSchema.id,
    data: { value: "s3cr3t" }
  })
  const limit = await call("POST", "/v2/concurrency_limits/", { name: "ui-check-limit", limit: 3 })
  await call("POST", "/concurrency_limits/", { tag: "ui-check", concurrency_limit: 2 })
  const automation = await call("POST", "/automations/", {
    name: "ui-check-automation",
    trigger: { type: "event", match: { "prefect.resource.id": "prefect.flow-run.*" }, expect: ["prefect.flow-run.Failed"], posture: "Reactive", threshold: 1, within: 0 },
    actions: [{ type: "do-nothing" }]
  })
  return { flow, deployment, runs, block, limit, automation }
}

const main = async () => {
  const server = await startServer()
  let failed = false
  try {
    const seeded = await seed()
    const firstTask = (await call("POST", "/task_runs/filter", { limit: 1 }))[0]
    const tagLimit = (await call("POST", "/concurrency_limits/filter", {}))[0]
    const pages = [
      "/dashboard",
      "/runs",
      `/runs/flow-run/${seeded.runs[0]}`,
      `/runs/flow-run/${seeded.runs[1]}`,
      `/runs/task-run/${firstTask.id}`,
      "/flows",
      `/flows/flow/${seeded.flow.id}`,
      "/deployments",
      `/deployments/deployment/${seeded.deployment.id}`,
      `/deployments/deployment/${seeded.deployment.id}/edit`,
      `/deployments/deployment/${seeded.deployment.id}/run`,
      "/work-pools",
      "/work-pools/work-pool/ui-check-pool",
      "/work-pools/work-pool/ui-check-pool/queue/default",
      "/work-pools/create",
      "/blocks",
      "/blocks/catalog",
      "/blocks/catalog/secret/create",
      `/blocks/block/${seeded.block.id}`,
      "/variables",
      "/automations",
      `/automations/automation/${seeded.automation.id}`,
      "/concurrency-limits",
      `/concurrency-limits/concurrency-limit/${tagLimit.id}`,
      `/concurrency-limits-v2/concurrency-limit-v2/${seeded.limit.id}`,
      "/events",
      "/artifacts",
      "/settings"
    ]
    const browser = await chromium.launch({
      executablePath,
      args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"]
    })
    const page = await browser.newPage()
    let current = ""
    const problems: Array<{ page: string; problem: string }> = []
    // Requests to other hosts (block types' logos on a CDN) fail on a machine without internet
    // access; they are counted apart, as they say nothing about Baton.
    const external = new Set<string>()
    const local = (url: string) => url.startsWith(root)
    // The UI's run pages point the favicon at /ico/<state>.svg before the run has loaded, so the
    // browser asks for /ico/undefined.svg whatever the server: not counted, said once at the end.
    let undefinedFavicon = 0
    page.on("response", (response) => {
      if (!local(response.url())) return
      if (response.url() === `${root}/ico/undefined.svg`) return void undefinedFavicon++
      if (response.status() >= 400) problems.push({ page: current, problem: `${response.status()} ${response.request().method()} ${response.url()}` })
    })
    page.on("requestfailed", (request) => {
      if (!local(request.url())) return void external.add(new URL(request.url()).host)
      // Cancelled by the browser because the next page was opened: no answer was due.
      if (request.failure()?.errorText === "net::ERR_ABORTED") return
      problems.push({ page: current, problem: `no answer (${request.failure()?.errorText}) ${request.method()} ${request.url()}` })
    })
    page.on("console", (message) => {
      // A resource that failed is reported by its request already.
      if (message.type() === "error" && !message.text().startsWith("Failed to load resource")) problems.push({ page: current, problem: `console: ${message.text().slice(0, 300)}` })
    })
    page.on("pageerror", (error) => problems.push({ page: current, problem: `page error: ${error.message.slice(0, 300)}` }))
    for (const route of pages) {
      current = route
      const before = problems.length
      await page.goto(root + route, { waitUntil: "networkidle", timeout: 30_000 }).catch((error) => {
        problems.push({ page: route, problem: `navigation: ${String(error).slice(0, 200)}` })
      })
      await page.waitForTimeout(500)
      const shown = (await page.title().catch(() => "")) || "(no title)"
      console.log(`${problems.length === before ? "ok  " : "FAIL"} ${route}  [${shown}]`)
      for (const p of problems.slice(before)) console.log(`       ${p.problem}`)
    }
    const screenshot = path.join(os.tmpdir(), "baton-ui-check-dashboard.png")
    await page.goto(root + "/dashboard", { waitUntil: "networkidle" })
    await page.screenshot({ path: screenshot, fullPage: true })
    console.log(`\nscreenshot of the dashboard: ${screenshot}`)
    await browser.close()
    if (undefinedFavicon > 0) console.log(`the UI asked for /ico/undefined.svg ${undefinedFavicon} times while a run page loaded (not counted)`)
    if (external.size > 0) console.log(`requests to other hosts left unanswered (not counted): ${[...external].join(", ")}`)
    failed = problems.length > 0
    console.log(failed ? `${problems.length} problems on ${new Set(problems.map((p) => p.page)).size} pages` : `all ${pages.length} pages without a failed request`)
  } finally {
    server.kill("SIGTERM")
  }
  process.exit(failed ? 1 : 0)
}

main().catch((error) => {
  console.error(error)
  process.exit(2)
})
