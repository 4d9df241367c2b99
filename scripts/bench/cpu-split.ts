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
}

interface Reading {
  readonly postgres: ReadonlyMap<number, number>
  readonly bench: number
  readonly idle: number
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

/** Idle and I/O wait of all cores, in ms (the first line of /proc/stat, in clock ticks of 10 ms). */
const machineIdle = (): number => {
  const fields = fs.readFileSync("/proc/stat", "utf8").split("\n")[0]!.trim().split(/\s+/).slice(1).map(Number)
  return (fields[3]! + fields[4]!) * 10
}

const benchCpu = () => {
  const used = process.cpuUsage()
  return (used.user + used.system) / 1000
}

/** A reading to measure from; undefined where /proc is not there. */
export const startSplit = (): Reading | undefined =>
  fs.existsSync("/proc/stat") ? { postgres: postgresProcesses(), bench: benchCpu(), idle: machineIdle() } : undefined

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
  return {
    ...(database === undefined ? {} : { databaseMsPerOp: database / operations }),
    benchMsPerOp: (benchCpu() - from.bench) / operations,
    idleMsPerOp: (machineIdle() - from.idle) / operations
  }
}

/** Splits of rounds with `operations` each, as one split per operation over all of them. */
export const joinSplits = (rounds: ReadonlyArray<{ readonly split: CpuSplit | undefined; readonly operations: number }>): CpuSplit | undefined => {
  if (rounds.some((round) => round.split === undefined)) return undefined
  const operations = rounds.reduce((sum, round) => sum + round.operations, 0)
  const total = (part: (split: CpuSplit) => number | undefined) =>
    rounds.reduce((sum, round) => sum + (part(round.split!) ?? NaN) * round.operations, 0) / operations
  const database = total((split) => split.databaseMsPerOp)
  return {
    ...(Number.isNaN(database) ? {} : { databaseMsPerOp: database }),
    benchMsPerOp: total((split) => split.benchMsPerOp),
    idleMsPerOp: total((split) => split.idleMsPerOp)
  }
}
