/**
 * The database vacuum (off by default: enabling it deletes data). Each pass deletes, in batches of
 * `batch_size`, the events older than server.events.retention_period, and the flow runs that ended
 * in a terminal state more than `retention_period` (P90D) ago with their task runs, states, logs and
 * artifacts.
 */
import { Duration, Effect, Layer } from "effect"
import { now } from "../domain/time.ts"
import { EventsRepo } from "../events/repo.ts"
import { Settings } from "../settings/settings.ts"
import { VacuumRepo } from "./vacuum-repo.ts"
import { defineService, loopSeconds, registerServices } from "./runner.ts"

/** Runs `deleteBatch` until a batch comes back short; the total. */
const inBatches = <E, R>(batchSize: number, deleteBatch: Effect.Effect<number, E, R>) =>
  Effect.gen(function* () {
    let total = 0
    while (true) {
      const deleted = yield* deleteBatch
      total += deleted
      if (deleted < batchSize) return total
    }
  })

export const vacuum = Effect.gen(function* () {
  const settings = yield* Settings
  const events = yield* EventsRepo
  const repo = yield* VacuumRepo
  const options = settings.server.services.db_vacuum
  const at = (yield* now).getTime()
  const eventsBefore = new Date(at - Duration.toMillis(settings.server.events.retention_period))
  const runsBefore = new Date(at - Duration.toMillis(options.retention_period))
  const deletedEvents = yield* inBatches(options.batch_size, events.deleteOlderThan(eventsBefore, options.batch_size))
  const deletedRuns = yield* inBatches(options.batch_size, repo.deleteEndedRuns(runsBefore, options.batch_size))
  if (deletedEvents + deletedRuns > 0) {
    yield* Effect.logInfo(`Database vacuum: deleted ${deletedEvents} events and ${deletedRuns} flow runs`)
  }
  return { events: deletedEvents, flowRuns: deletedRuns }
})

export const DbVacuumService = registerServices(
  defineService({ name: "db_vacuum", interval: loopSeconds((s) => s.db_vacuum), tick: vacuum, singleton: true })
).pipe(Layer.provide([EventsRepo.Default, VacuumRepo.Default]))
