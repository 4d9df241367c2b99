/**
 * Table upkeep, a loop of the event persister (whose outbox is the busiest of these tables), run by
 * the leader: VACUUMs Baton's churning tables (table-upkeep-repo.ts) once their dead rows pass
 * DEAD_ROWS_TO_VACUUM. PostgreSQL's autovacuum would, but not always in time: it is off on some
 * servers, busy for hours with the large tables on others, and never runs on the embedded database.
 * A churning table it leaves alone grows without end, and the reads that scan it slow down with it
 * (the run history reads the rollup's pending changes on every request).
 */
import { Duration, Effect, Layer } from "effect"
import { CHURNING_TABLES, TableUpkeepRepo } from "./table-upkeep-repo.ts"
import { defineService, registerServices } from "./runner.ts"

/** Dead rows a churning table may hold before it is vacuumed: a few pages' worth. */
export const DEAD_ROWS_TO_VACUUM = 1000

/** How often the dead rows are looked at. */
const UPKEEP_EVERY = Duration.seconds(10)

/** One pass: the tables vacuumed. */
export const keepTables = Effect.gen(function* () {
  const repo = yield* TableUpkeepRepo
  const dead = yield* repo.deadRows(CHURNING_TABLES)
  const vacuumed = CHURNING_TABLES.filter((table) => (dead.get(table) ?? 0) >= DEAD_ROWS_TO_VACUUM)
  for (const table of vacuumed) yield* repo.vacuum(table)
  if (vacuumed.length > 0) yield* Effect.logDebug(`Table upkeep: vacuumed ${vacuumed.join(", ")}`)
  return vacuumed
})

export const TableUpkeepService = registerServices(
  defineService({ name: "event_persister", loop: "table upkeep", interval: () => UPKEEP_EVERY, tick: keepTables, singleton: true })
).pipe(Layer.provide(TableUpkeepRepo.Default))
