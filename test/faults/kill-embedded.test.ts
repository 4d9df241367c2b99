/**
 * The embedded database (PGlite under BATON_HOME) when the server process is killed with SIGKILL
 * in the middle of writes: the next start recovers it, the server answers, and everything it
 * accepted before the kill is there (objects it answered 201 for, states it answered ACCEPT for),
 * with no half-applied transition; a second server on the same home is refused while one runs. Run only with the embedded test database (the PostgreSQL run has
 * kill-postgres.test.ts); the home starts from the run's migrated template, so no start migrates.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { idOf } from "../support/api.ts"
import { onServer, seededHome } from "../support/database.ts"
import { call, ensureBundle, ok, type ServerProcess, scopedServerProcess, startServerProcess } from "../support/server-process.ts"
import { type AcceptedState, invariantViolations, setStateBurst, type StoredRun, until } from "./kill-invariants.ts"

// The fields of a run and its states the invariants look at, checked on the wire.
const decodeRun = Schema.decodeUnknownSync(Schema.Struct({ state_id: Schema.NullOr(Schema.String), state_type: Schema.NullOr(Schema.String) }))
const decodeStates = Schema.decodeUnknownSync(Schema.Array(Schema.Struct({ id: Schema.String, type: Schema.String, timestamp: Schema.String })))

/** The runs with their states as the API shows them (states oldest first). */
const storedRuns = (server: ServerProcess, runIds: ReadonlyArray<string>) =>
  Promise.all(runIds.map(async (id): Promise<StoredRun> => {
    const run = decodeRun(await ok(server, "GET", `/flow_runs/${id}`))
    const states = [...decodeStates(await ok(server, "GET", `/flow_run_states/?flow_run_id=${id}`))]
    states.sort((a, b) => a.timestamp.localeCompare(b.timestamp) || a.id.localeCompare(b.id))
    return { id, state_id: run.state_id, state_type: run.state_type, states }
  }))

/** Creates flows one after another until a request fails; the ids of those answered 201. */
const flowCreator = (server: ServerProcess) => {
  const created: Array<string> = []
  let stopped = false
  const done = (async () => {
    for (let i = 0; !stopped; i++) {
      try {
        const answer = await call(server, "POST", "/flows/", { name: `before-kill-${i}` })
        if (answer.status === 201) created.push(idOf(answer.body))
      } catch {
        return
      }
    }
  })()
  return { created, stop: () => ((stopped = true), done) }
}

const env = { BATON_SERVER_SERVICES_LATE_RUNS_ENABLED: "false", BATON_SERVER_SERVICES_SCHEDULER_ENABLED: "false" }

describe.skipIf(onServer())("the embedded database when the server is killed with SIGKILL", () => {
  it.live("recovers on the next start with everything accepted before the kill, and no half-applied transition", () =>
    Effect.gen(function* () {
      yield* Effect.promise(ensureBundle)
      const home = yield* seededHome

      const first = yield* scopedServerProcess({ home, env })
      const runIds = yield* Effect.promise(async () => {
        const flow = await ok(first, "POST", "/flows/", { name: "killed-embedded" }, 201)
        const ids: Array<string> = []
        for (let i = 0; i < 10; i++) ids.push(idOf(await ok(first, "POST", "/flow_runs/", { flow_id: flow.id }, 201)))
        return ids
      })
      const burst = setStateBurst(first, runIds)
      const flows = flowCreator(first)
      yield* Effect.promise(() => until(() => burst.accepted.length >= 100 && flows.created.length >= 5, 40_000))
      yield* Effect.promise(() => first.kill("SIGKILL"))
      yield* Effect.promise(() => Promise.all([burst.stop(), flows.stop()]))
      expect(burst.other).toEqual([])
      const accepted: Array<AcceptedState> = [...burst.accepted]
      const createdFlows = [...flows.created]

      // The next start recovers the database (PostgreSQL's crash recovery, inside PGlite) and serves.
      const second = yield* scopedServerProcess({ home, env })
      for (const id of createdFlows) expect((yield* Effect.promise(() => call(second, "GET", `/flows/${id}`))).status).toBe(200)
      expect(invariantViolations(yield* Effect.promise(() => storedRuns(second, runIds)), accepted)).toEqual([])

      // A second server on the same home is refused while this one runs (the killed one's lock was taken over).
      const refused = yield* Effect.promise(() => startServerProcess({ home, env, readyWithinMs: 30_000 }).then(
        async (unexpected) => {
          await unexpected.kill("SIGKILL")
          return "started"
        },
        (error: Error) => error.message
      ))
      expect(refused).toContain(`is in use by process ${second.pid}`)

      // It goes on working on the recovered database.
      const again = setStateBurst(second, runIds)
      yield* Effect.promise(() => until(() => again.accepted.length >= 20, 30_000))
      yield* Effect.promise(again.stop)
      expect(again.other).toEqual([])
      expect(invariantViolations(yield* Effect.promise(() => storedRuns(second, runIds)), [...accepted, ...again.accepted])).toEqual([])
      yield* Effect.promise(() => second.kill("SIGTERM"))
    }).pipe(Effect.scoped), 120_000)
})
