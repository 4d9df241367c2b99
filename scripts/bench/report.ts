/** The bench's result rows: printed as a table as they come, and saved as JSON. */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import type { CpuSplit } from "./cpu-split.ts"

export interface Row {
  readonly scenario: string
  /** Requests, runs, events or jobs per second. */
  readonly throughput?: number
  readonly unit?: string
  readonly p50?: number
  readonly p99?: number
  /** Server resident memory (MiB) at the end of the scenario. */
  readonly rssMiB?: number
  /** The server's CPU time (user + system) per operation, in milliseconds, over the scenario. */
  readonly cpuMsPerOp?: number
  /** PostgreSQL's, the load generator's and the idle cores' milliseconds per operation (cpu-split.ts). */
  readonly split?: CpuSplit
  /** What the row is compared with, and the ratio of its throughput to that row's. */
  readonly versus?: string
  readonly ratio?: number
  /** The target for this row and whether this run met it. */
  readonly target?: string
  readonly met?: boolean
  readonly note?: string
}

const fixed = (value: number | undefined, digits = 1) =>
  value === undefined || Number.isNaN(value) ? "" : value >= 1000 ? Math.round(value).toString() : value.toFixed(digits)

/** The idle time core by core, on a machine of a few cores: " (1.93 + 0.01)". */
const idleByCore = (split: CpuSplit) => {
  const cores = split.idleByCoreMsPerOp ?? []
  return cores.length < 2 || cores.length > 4 ? "" : ` (${cores.map((ms) => fixed(ms, 2)).join(" + ")})`
}

const columns: ReadonlyArray<[string, (row: Row) => string]> = [
  ["scenario", (r) => r.scenario],
  ["throughput", (r) => (r.throughput === undefined ? "" : `${fixed(r.throughput)} ${r.unit ?? "req/s"}`)],
  ["p50 ms", (r) => fixed(r.p50)],
  ["p99 ms", (r) => fixed(r.p99)],
  ["RSS MiB", (r) => fixed(r.rssMiB, 0)],
  ["server CPU ms/op", (r) => fixed(r.cpuMsPerOp, 2)],
  ["database / load / idle ms/op", (r) =>
    r.split === undefined ? "" : `${fixed(r.split.databaseMsPerOp, 2) || "?"} / ${fixed(r.split.benchMsPerOp, 2)} / ${fixed(r.split.idleMsPerOp, 2)}${idleByCore(r.split)}`],
  ["vs baseline", (r) => (r.ratio === undefined ? "" : `${(r.ratio * 100).toFixed(0)}% of ${r.versus}`)],
  ["target", (r) => (r.target === undefined ? "" : `${r.target} ${r.met === undefined ? "" : r.met ? "met" : "NOT MET"}`)],
  ["note", (r) => r.note ?? ""]
]

/** A Markdown table of `rows` (also readable in a terminal). */
export const table = (rows: ReadonlyArray<Row>): string => {
  const cells = rows.map((row) => columns.map(([, cell]) => cell(row)))
  const widths = columns.map(([title], i) => Math.max(title.length, ...cells.map((c) => c[i]!.length)))
  const line = (values: ReadonlyArray<string>) => `| ${values.map((v, i) => v.padEnd(widths[i]!)).join(" | ")} |`
  return [
    line(columns.map(([title]) => title)),
    `| ${widths.map((w) => "-".repeat(w)).join(" | ")} |`,
    ...cells.map(line)
  ].join("\n")
}

export const machine = () => ({
  cpus: os.cpus().length,
  cpuModel: os.cpus()[0]?.model ?? "unknown",
  memoryGiB: Math.round(os.totalmem() / 2 ** 30),
  node: process.version,
  platform: `${os.platform()} ${os.release()}`,
  /** 1, 5 and 15 minutes: what else the (possibly shared) machine was doing. */
  loadAverage: os.loadavg().map((load) => Number(load.toFixed(2))),
  /** What the kernel's command line says about scheduling (a virtual machine's kernel may pack work on fewer cores). */
  schedulerOptions: kernelSchedulerOptions()
})

/** The `sched…` options of the kernel's command line, where Linux shows it. */
const kernelSchedulerOptions = (): ReadonlyArray<string> => {
  try {
    return fs.readFileSync("/proc/cmdline", "utf8").trim().split(/\s+/).filter((option) => option.startsWith("sched"))
  } catch {
    return []
  }
}

const RESULTS = path.join(path.dirname(fileURLToPath(import.meta.url)), "results")

/** Writes the run to scripts/bench/results/<time>.json (a git-ignored folder) and returns its path. */
export const save = (run: Record<string, unknown>): string => {
  fs.mkdirSync(RESULTS, { recursive: true })
  const file = path.join(RESULTS, `${new Date().toISOString().replace(/[:.]/g, "-")}.json`)
  fs.writeFileSync(file, JSON.stringify(run, null, 2))
  return file
}
