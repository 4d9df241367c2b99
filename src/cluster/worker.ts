/**
 * A worker's side of `baton server start --workers N` (the primary is ./primary.ts). A worker is a
 * whole Baton server; it tells the primary when it serves, with the lines it would have printed (the
 * primary prints them once for all workers), and stops when the primary asks, over node:cluster's
 * channel.
 *
 * The primary asks by message, not by signal: a terminal's Ctrl-C reaches every process of the group,
 * and a second signal ends an Effect program at once instead of letting it close (NodeRuntime.runMain
 * listens for the first one only).
 */
import cluster from "node:cluster"
import { Effect } from "effect"

/** Whether this process is a worker forked by a primary. */
export const isWorker = cluster.isWorker

/** The worker's number as the primary counts them (a replacement gets the next one); undefined outside a cluster. */
export const workerId = (): number | undefined => cluster.worker?.id

/** What a worker says once it serves. */
export interface Started {
  readonly type: "baton:started"
  /** The port the workers share (the one the settings name, or the one picked for 0). */
  readonly port: number
  /** The lines a single server prints at start ("Baton …: API at …", the UI's). */
  readonly lines: ReadonlyArray<string>
}

export const STOP = { type: "baton:stop" } as const

export const isStarted = (message: unknown): message is Started =>
  typeof message === "object" && message !== null && (message as { type?: unknown }).type === "baton:started"

const isStop = (message: unknown) =>
  typeof message === "object" && message !== null && (message as { type?: unknown }).type === STOP.type

/** Tells the primary that this worker serves. */
export const announce = (port: number, lines: ReadonlyArray<string>) =>
  Effect.async<void>((resume) => {
    const message: Started = { type: "baton:started", port, lines }
    process.send!(message, undefined, {}, () => resume(Effect.void))
  })

/**
 * Resolves when the primary asks this worker to stop. It listens from the call on, so main.ts calls
 * it first thing: a request that comes while the worker is still starting is not missed.
 */
export const stopRequested = (): Promise<void> =>
  new Promise((resolve) => {
    const listener = (message: unknown) => {
      if (!isStop(message)) return
      process.off("message", listener)
      resolve()
    }
    process.on("message", listener)
  })
