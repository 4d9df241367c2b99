/**
 * Two full servers on one PostgreSQL database, as a rolling deploy starts them: one of them leads
 * the singleton services, work they do is done once (each expired pause fails its run once), and
 * when the leader is killed with SIGKILL the other takes over within seconds. A process running only
 * some of the singleton services leads those and leaves the rest to another. PostgreSQL only: on the
 * embedded database one process serves the database.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { idOf } from "../support/api.ts"
import { onServer, scopedDatabase } from "../support/database.ts"
import { ensureBundle, ok, type ServerProcess, scopedEmptyHome, scopedServerProcess } from "../support/server-process.ts"
import { until } from "./kill-invariants.ts"

const LEADS = "This process leads the singleton services"

const leadsIn = (server: ServerProcess) => server.output().split(LEADS).length - 1

/** `count` runs paused with a pause that expires a second from now. */
const pausedRuns = async (server: ServerProcess, count: number) => {
  const flow = await ok(server, "POST", "/flows/", { name: `leadership-${crypto.randomUUID()}` }, 201)
  const ids: Array<string> = []
  for (let i = 0; i < count; i++) {
    const id = idOf(await ok(server, "POST", "/flow_runs/", { flow_id: flow.id }, 201))
    await ok(server, "POST", `/flow_runs/${id}/set_state`, { state: { type: "RUNNING" } }, 201)
    const timeout = new Date(Date.now() + 1000).toISOString()
    await ok(server, "POST", `/flow_runs/${id}/set_state`, { state: { type: "PAUSED", state_details: { pause_key: "k", pause_timeout: timeout } } }, 201)
    ids.push(id)
  }
  return ids
}

/** The state types of each run, oldest first. */
const stateTypes = (server: ServerProcess, ids: ReadonlyArray<string>) =>
  Promise.all(ids.map(async (id) => {
    const states = (await ok(server, "GET", `/flow_run_states/?flow_run_id=${id}`)) as unknown as Array<{ type: string; timestamp: string }>
    return states.sort((a, b) => a.timestamp.localeCompare(b.timestamp)).map((state) => state.type)
  }))

const allFailedOnce = async (server: ServerProcess, ids: ReadonlyArray<string>) => {
  const types = await stateTypes(server, ids)
  return types.every((list) => list.at(-1) === "FAILED")
}

// Every service on, the pause expirations every half second: both servers would fail each run.
const env = {
  BATON_SERVER_SERVICES_PAUSE_EXPIRATIONS_LOOP_SECONDS: "0.5",
  BATON_SERVER_LOGGING_LEVEL: "INFO"
}

describe.skipIf(!onServer())("leadership of the singleton services among servers on one PostgreSQL database", () => {
  it.live("one server leads, work is done once, and the other takes over within seconds of a SIGKILL", () =>
    Effect.gen(function* () {
      yield* Effect.promise(ensureBundle)
      const database = yield* scopedDatabase({ migrated: true })
      const [homeA, homeB] = [yield* scopedEmptyHome, yield* scopedEmptyHome]
      const [a, b] = yield* Effect.all([
        scopedServerProcess({ home: homeA, databaseUrl: database.url!, env }),
        scopedServerProcess({ home: homeB, databaseUrl: database.url!, env })
      ], { concurrency: 2 })

      yield* Effect.promise(() => until(async () => leadsIn(a) + leadsIn(b) >= 1, 20_000, 50))
      yield* Effect.sleep("1 second")
      expect(leadsIn(a) + leadsIn(b)).toBe(1)
      const [leader, follower] = leadsIn(a) === 1 ? [a, b] : [b, a]

      // Paused runs whose pause expires: each fails once.
      const first = yield* Effect.promise(() => pausedRuns(follower, 10))
      yield* Effect.promise(() => until(() => allFailedOnce(follower, first), 20_000, 100))
      yield* Effect.sleep("1 second")
      expect(yield* Effect.promise(() => stateTypes(follower, first))).toEqual(first.map(() => ["PENDING", "RUNNING", "PAUSED", "FAILED"]))

      // The leader is killed: the follower leads within seconds, and does the work.
      const killed = Date.now()
      yield* Effect.promise(() => leader.kill("SIGKILL"))
      yield* Effect.promise(() => until(async () => leadsIn(follower) === 1, 10_000, 20))
      const failover = Date.now() - killed
      expect(failover).toBeLessThan(5_000)
      const second = yield* Effect.promise(() => pausedRuns(follower, 5))
      yield* Effect.promise(() => until(() => allFailedOnce(follower, second), 20_000, 100))
      expect(yield* Effect.promise(() => stateTypes(follower, second))).toEqual(second.map(() => ["PENDING", "RUNNING", "PAUSED", "FAILED"]))
      yield* Effect.promise(() => follower.kill("SIGTERM"))
    }).pipe(Effect.scoped), 120_000)

  it.live("an API server without the scheduler leaves it to a services process started beside it, which schedules runs", () =>
    Effect.gen(function* () {
      yield* Effect.promise(ensureBundle)
      const database = yield* scopedDatabase({ migrated: true })
      // Started first, it takes the locks of every singleton it runs: all but the scheduler.
      const api = yield* scopedServerProcess({
        home: yield* scopedEmptyHome,
        databaseUrl: database.url!,
        env: { ...env, BATON_SERVER_SERVICES_SCHEDULER_ENABLED: "false" }
      })
      yield* Effect.promise(() => until(async () => leadsIn(api) === 1, 20_000, 50))
      const services = yield* scopedServerProcess({
        home: yield* scopedEmptyHome,
        databaseUrl: database.url!,
        env,
        command: ["server", "services", "start"]
      })
      const instances = () => ok(api, "GET", "/admin/instances") as unknown as Promise<Array<{ pid: number; leads: Array<string> }>>
      yield* Effect.promise(() =>
        until(async () => (await instances()).find((instance) => instance.pid === services.pid)?.leads.includes("scheduler") === true, 20_000, 100)
      )
      const listed = yield* Effect.promise(instances)
      expect(listed.find((instance) => instance.pid === services.pid)!.leads).toEqual(["scheduler"])
      expect(listed.find((instance) => instance.pid === api.pid)!.leads).toEqual(
        expect.arrayContaining(["cancellation_cleanup", "foreman", "late_runs", "pause_expirations", "repossessor", "triggers"])
      )
      expect(listed.find((instance) => instance.pid === api.pid)!.leads).not.toContain("scheduler")

      // A deployment made through the API server: the services process schedules its runs.
      const flow = yield* Effect.promise(() => ok(api, "POST", "/flows/", { name: `leadership-${crypto.randomUUID()}` }, 201))
      const deployment = yield* Effect.promise(() =>
        ok(api, "POST", "/deployments/", { name: "hourly", flow_id: flow.id, schedules: [{ schedule: { interval: 3600 } }] }, 201)
      )
      const scheduled = () =>
        ok(api, "POST", "/flow_runs/filter", { deployments: { id: { any_: [deployment.id] } } }) as unknown as Promise<Array<unknown>>
      yield* Effect.promise(() => until(async () => (await scheduled()).length > 0, 20_000, 200))
      expect((yield* Effect.promise(scheduled)).length).toBeGreaterThan(0)
    }).pipe(Effect.scoped), 120_000)
})
