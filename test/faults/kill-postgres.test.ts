/**
 * The real server process killed with SIGKILL on PostgreSQL: during a scheduler batch, and during a
 * burst of set_state calls. After the kill, and again after a restart, the database holds no duplicate
 * scheduled run, no half-applied transition (a run's state is its latest state row, and every state
 * row's run was updated with it) and every state a set_state answered ACCEPT for. PostgreSQL only (the
 * embedded database's own kill test is kill-embedded.test.ts); a few seconds per server start.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import pg from "pg"
import { idOf } from "../support/api.ts"
import { onServer, scopedDatabase } from "../support/database.ts"
import { ensureBundle, ok, type ServerProcess, scopedEmptyHome, scopedServerProcess } from "../support/server-process.ts"
import { invariantViolations, setStateBurst, type StoredRun, until } from "./kill-invariants.ts"

const scopedClient = (url: string) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const client = new pg.Client({ connectionString: url })
      await client.connect()
      return client
    }),
    (client) => Effect.promise(() => client.end())
  )

/** Waits until PostgreSQL has ended the killed server's sessions (rolling back what they had open). */
const sessionsGone = (admin: pg.Client, database: string) =>
  until(async () => {
    const { rows } = await admin.query(
      "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid() AND application_name = 'baton'",
      [database]
    )
    return rows[0].n === 0
  }, 15_000, 50)

/** Every flow run with its states, oldest first (timestamps order a run's states). */
const storedRuns = async (client: pg.Client, where = "true"): Promise<Array<StoredRun>> => {
  const { rows } = await client.query(`
    SELECT r.id, r.state_id, r.state_type,
      coalesce((SELECT jsonb_agg(jsonb_build_object('id', s.id, 'type', s.type, 'timestamp', s.timestamp) ORDER BY s.timestamp, s.id)
        FROM flow_run_state s WHERE s.flow_run_id = r.id), '[]'::jsonb) AS states
    FROM flow_run r WHERE ${where}
  `)
  return rows
}

/** Scheduled runs that repeat a slot of their deployment's schedule (by expected start or by key). */
const duplicateScheduledRuns = async (client: pg.Client) => {
  const { rows } = await client.query(`
    SELECT deployment_id, expected_start_time, count(*)::int AS n FROM flow_run
    WHERE auto_scheduled GROUP BY deployment_id, expected_start_time HAVING count(*) > 1
    UNION ALL
    SELECT deployment_id, NULL, count(*)::int FROM flow_run
    WHERE auto_scheduled GROUP BY deployment_id, idempotency_key HAVING count(*) > 1
  `)
  return rows
}

/** State rows of scheduled runs that are not their run's state (the scheduler writes exactly one each). */
const strayStates = async (client: pg.Client) => {
  const { rows } = await client.query(`
    SELECT s.id FROM flow_run_state s JOIN flow_run r ON r.id = s.flow_run_id
    WHERE r.auto_scheduled AND s.id <> r.state_id
    UNION ALL
    SELECT r.id FROM flow_run r WHERE r.auto_scheduled AND NOT EXISTS (
      SELECT 1 FROM flow_run_state s WHERE s.id = r.state_id AND s.type = r.state_type AND s.flow_run_id = r.id)
  `)
  return rows
}

const scheduledCount = async (client: pg.Client) =>
  (await client.query("SELECT count(*)::int AS n FROM flow_run WHERE auto_scheduled")).rows[0].n as number

/** Deployments with fewer scheduled runs than their cap. */
const shortDeployments = async (client: pg.Client) =>
  (await client.query(`
    SELECT d.id FROM deployment d
    WHERE (SELECT count(*) FROM flow_run r WHERE r.deployment_id = d.id AND r.auto_scheduled) < $1
  `, [RUNS_PER_DEPLOYMENT])).rows.length

const DEPLOYMENTS = 30
/**
 * Runs each hourly deployment is given: its cap (deployment_schedule_max_scheduled_runs), since
 * min_scheduled_time asks for more hours than that.
 */
const RUNS_PER_DEPLOYMENT = 60

/** The scheduler working in many small batches, often, and nothing else changing runs. */
const schedulerEnv = {
  BATON_SERVER_SERVICES_SCHEDULER_LOOP_SECONDS: "1",
  BATON_SERVER_SERVICES_SCHEDULER_RECENT_DEPLOYMENTS_LOOP_SECONDS: "0.5",
  BATON_SERVER_SERVICES_SCHEDULER_INSERT_BATCH_SIZE: "20",
  BATON_SERVER_SERVICES_SCHEDULER_DEPLOYMENT_BATCH_SIZE: "3",
  BATON_SERVER_SERVICES_SCHEDULER_MIN_SCHEDULED_TIME: "P30D",
  BATON_SERVER_DEPLOYMENT_SCHEDULE_MAX_SCHEDULED_RUNS: String(RUNS_PER_DEPLOYMENT),
  BATON_SERVER_SERVICES_LATE_RUNS_ENABLED: "false"
}

describe.skipIf(!onServer())("a server killed with SIGKILL (PostgreSQL)", () => {
  it.live("during a scheduler batch: no duplicate scheduled run, no run without its state; the restart completes the schedule", () =>
    Effect.gen(function* () {
      yield* Effect.promise(ensureBundle)
      const database = yield* scopedDatabase({ migrated: true })
      const url = database.url!
      const name = new URL(url).pathname.slice(1)
      const home = yield* scopedEmptyHome
      const admin = yield* scopedClient(url)

      const first: ServerProcess = yield* scopedServerProcess({ home, databaseUrl: url, env: schedulerEnv })
      const flow = yield* Effect.promise(() => ok(first, "POST", "/flows/", { name: "killed-scheduler" }, 201))
      // Deployments arrive while the scheduler's quick loop schedules the ones before them (until the kill).
      const created = Effect.tryPromise(async () => {
        for (let i = 0; i < DEPLOYMENTS; i++) {
          await ok(first, "POST", "/deployments/", {
            name: `hourly-${i}`,
            flow_id: flow.id,
            schedules: [{ schedule: { interval: 3600, anchor_date: "2026-01-01T00:00:00Z" } }]
          }, 201)
        }
      })
      // Killed once some batches are committed, the moment a scheduler transaction is seen open
      // (inserting runs or their states); failing that, a third of the way through.
      let caughtOpen = false
      const killMidBatch = Effect.promise(async () => {
        await until(async () => {
          const { rows } = await admin.query(
            `SELECT (SELECT count(*)::int FROM flow_run WHERE auto_scheduled) AS committed,
               (SELECT count(*)::int FROM pg_stat_activity WHERE datname = $1 AND application_name = 'baton'
                 AND xact_start IS NOT NULL AND query LIKE '%INSERT INTO flow_run%') AS open`,
            [name]
          )
          caughtOpen = rows[0].committed >= 200 && rows[0].open > 0
          return caughtOpen || rows[0].committed > DEPLOYMENTS * RUNS_PER_DEPLOYMENT / 3
        }, 40_000, 2)
        await first.kill("SIGKILL")
      })
      yield* Effect.all([Effect.ignore(created), killMidBatch], { concurrency: 2 })
      expect(first.exited()).toBe(true)
      yield* Effect.promise(() => sessionsGone(admin, name))

      const deployments = (yield* Effect.promise(() => admin.query("SELECT count(*)::int AS n FROM deployment"))).rows[0].n as number
      const atKill = yield* Effect.promise(() => scheduledCount(admin))
      // The kill came before the schedule was complete (it is a test of a batch cut off).
      expect(atKill).toBeGreaterThanOrEqual(200)
      expect(atKill).toBeLessThan(deployments * RUNS_PER_DEPLOYMENT)
      expect(yield* Effect.promise(() => duplicateScheduledRuns(admin))).toEqual([])
      expect(yield* Effect.promise(() => strayStates(admin))).toEqual([])
      expect(invariantViolations(yield* Effect.promise(() => storedRuns(admin)), [])).toEqual([])

      // Restarted, the scheduler completes every deployment's runs, each slot once.
      const second = yield* scopedServerProcess({ home, databaseUrl: url, env: schedulerEnv })
      yield* Effect.promise(() => until(async () => (await shortDeployments(admin)) === 0, 40_000, 200))
      expect(yield* Effect.promise(() => duplicateScheduledRuns(admin))).toEqual([])
      expect(yield* Effect.promise(() => strayStates(admin))).toEqual([])
      yield* Effect.promise(() => second.kill("SIGTERM"))
      console.log(`killed with a scheduler transaction open: ${caughtOpen}; runs at the kill: ${atKill} of ${deployments * RUNS_PER_DEPLOYMENT}`)
    }).pipe(Effect.scoped), 120_000)

  it.live("during a burst of set_state calls: every accepted state stored, no half-applied transition; the restart goes on", () =>
    Effect.gen(function* () {
      yield* Effect.promise(ensureBundle)
      const database = yield* scopedDatabase({ migrated: true })
      const url = database.url!
      const name = new URL(url).pathname.slice(1)
      const home = yield* scopedEmptyHome
      const admin = yield* scopedClient(url)
      const env = { BATON_SERVER_SERVICES_LATE_RUNS_ENABLED: "false", BATON_SERVER_SERVICES_SCHEDULER_ENABLED: "false" }

      const first = yield* scopedServerProcess({ home, databaseUrl: url, env })
      const runIds = yield* Effect.promise(async () => {
        const flow = await ok(first, "POST", "/flows/", { name: "killed-burst" }, 201)
        const ids: Array<string> = []
        for (let i = 0; i < 40; i++) ids.push(idOf(await ok(first, "POST", "/flow_runs/", { flow_id: flow.id }, 201)))
        return ids
      })
      const burst = setStateBurst(first, runIds)
      yield* Effect.promise(() => until(() => burst.accepted.length >= 400, 40_000))
      yield* Effect.promise(() => first.kill("SIGKILL"))
      yield* Effect.promise(burst.stop)
      yield* Effect.promise(() => sessionsGone(admin, name))

      expect(burst.other).toEqual([])
      const accepted = [...burst.accepted]
      expect(accepted.length).toBeGreaterThanOrEqual(400)
      expect(invariantViolations(yield* Effect.promise(() => storedRuns(admin)), accepted)).toEqual([])

      // Restarted: the same runs take new transitions, and everything still holds.
      const second = yield* scopedServerProcess({ home, databaseUrl: url, env })
      const again = setStateBurst(second, runIds)
      yield* Effect.promise(() => until(() => again.accepted.length >= 80, 30_000))
      yield* Effect.promise(again.stop)
      expect(again.other).toEqual([])
      yield* Effect.promise(() => second.kill("SIGTERM"))
      expect(invariantViolations(yield* Effect.promise(() => storedRuns(admin)), [...accepted, ...again.accepted])).toEqual([])
    }).pipe(Effect.scoped), 120_000)
})
