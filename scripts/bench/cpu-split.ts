/**
 * Where a scenario's CPU went on this machine besides the server: PostgreSQL's processes, the bench
 * process itself (the load generator) and the time no core had anything to run. The lifecycle rows
 * carry it, so that a ratio to the SQL baseline can be read as milliseconds per lifecycle of each
 * part (on two cores shared by all of them, every part's milliseconds lower the rate).
 */
import * as fs from "node:fs"
import { cpuTime } from "./startup.ts"

export interface CpuSplit {
  /** CPU of the `postgres` processes of this machine per operation; undefined when none runs here. */
  readonly databaseMsPerOp?: number
  /** CPU of the bench process (the load generator) per operation. */
  readonly benchMsPerOp: number
  /** Idle time of all cores together per operation (from /proc/stat; I/O wait included). */
  readonly idleMsPerOp: number
  /**
   * The same idle time core by core: a machine whose kernel keeps work queued on one core while
   * another idles shows it here (docs/performance.md, "Thirteenth round").
   */
  readonly idleByCoreMsPerOp?: ReadonlyArray<number>
}

interface Reading {
  readonly postgres: ReadonlyMap<number, number>
  readonly bench: number
  readonly idle: number
  readonly idleByCore: ReadonlyArray<number>
}

/** CPU time in ms of each process of this machine named `postgres` (none when it runs elsewhere). */
const postgresProcesses = (): Map<number, number> => {
  const found = new Map<number, number>()
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    try {
      if (fs.readFileSync(`/proc/${entry}/comm`, "utf8").trim() === "postgres") found.set(Number(entry), cpuTime(Number(entry)))
    } catch {
      // Gone meanwhile.
    }
  }
  return found
}

/** Idle and I/O wait in ms of all cores (the first line of /proc/stat, in clock ticks of 10 ms) and of each (the cpuN lines). */
const machineIdle = (): { readonly all: number; readonly byCore: ReadonlyArray<number> } => {
  const idleOf = (line: string) => {
    const fields = line.trim().split(/\s+/).slice(1).map(Number)
    return (fields[3]! + fields[4]!) * 10
  }
  const lines = fs.readFileSync("/proc/stat", "utf8").split("\n")
  return { all: idleOf(lines[0]!), byCore: lines.filter((line) => /^cpu\d+ /.test(line)).map(idleOf) }
}

const benchCpu = () => {
  const used = process.cpuUsage()
  return (used.user + used.system) / 1000
}

/** A reading to measure from; undefined where /proc is not there. */
export const startSplit = (): Reading | undefined => {
  if (!fs.existsSync("/proc/stat")) return undefined
  const idle = machineIdle()
  return { postgres: postgresProcesses(), bench: benchCpu(), idle: idle.all, idleByCore: idle.byCore }
}

/**
 * The split since `from`, per operation. A PostgreSQL process that started in between counts from
 * zero; one that ended in between (an autovacuum worker) is not counted.
 */
export const splitSince = (from: Reading | undefined, operations: number): CpuSplit | undefined => {
  if (from === undefined || operations === 0) return undefined
  const postgres = postgresProcesses()
  const database = from.postgres.size === 0 && postgres.size === 0
    ? undefined
    : [...postgres].reduce((sum, [pid, ms]) => sum + ms - (from.postgres.get(pid) ?? 0), 0)
  const idle = machineIdle()
  return {
    ...(database === undefined ? {} : { databaseMsPerOp: database / operations }),
    benchMsPerOp: (benchCpu() - from.bench) / operations,
    idleMsPerOp: (idle.all - from.idle) / operations,
    idleByCoreMsPerOp: idle.byCore.map((ms, core) => (ms - (from.idleByCore[core] ?? 0)) / operations)
  }
}

/** Splits of rounds with `operations` each, as one split per operation over all of them. */
export const joinSplits = (rounds: ReadonlyArray<{ readonly split: CpuSplit | undefined; readonly operations: number }>): CpuSplit | undefined => {
  if (rounds.some((round) => round.split === undefined)) return undefined
  const operations = rounds.reduce((sum, round) => sum + round.operations, 0)
  const total = (part: (split: CpuSplit) => number | undefined) =>
    rounds.reduce((sum, round) => sum + (part(round.split!) ?? NaN) * round.operations, 0) / operations
  const database = total((split) => split.databaseMsPerOp)
  const cores = rounds[0]!.split!.idleByCoreMsPerOp?.length ?? 0
  return {
    ...(Number.isNaN(database) ? {} : { databaseMsPerOp: database }),
    benchMsPerOp: total((split) => split.benchMsPerOp),
    idleMsPerOp: total((split) => split.idleMsPerOp),
    ...(cores === 0 ? {} : { idleByCoreMsPerOp: Array.from({ length: cores }, (_, core) => total((split) => split.idleByCoreMsPerOp?.[core])) })
  }
}
