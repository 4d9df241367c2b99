import { Migrator, SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { layerFromSettings } from "../../src/database/client.ts"
import { migrate, MIGRATIONS_TABLE, reset } from "../../src/database/migrator.ts"
import { migrations } from "../../src/database/migrations/index.ts"
import { layer as settingsLayer } from "../../src/settings/settings.ts"
import { scopedDatabase } from "../support/database.ts"
import { rollupIsExact } from "../support/rollup.ts"

const expected = Object.keys(migrations).map((key) => [Number(key.slice(0, 4)), key.slice(5)] as const)

const tables = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  Effect.map(
    sql<{ tablename: string }>`SELECT tablename FROM pg_tables WHERE schemaname = current_schema() ORDER BY tablename`,
    (rows) => rows.map((r) => r.tablename)
  )
)

describe("migrations", () => {
  it.scoped("apply every migration to an empty database, and nothing the second time", () =>
    Effect.gen(function* () {
      const database = yield* scopedDatabase({ migrated: false })
      const sql = Context.get(yield* Layer.build(database.connect()), SqlClient.SqlClient)
      const run = <A, E>(effect: Effect.Effect<A, E, SqlClient.SqlClient>) => Effect.provideService(effect, SqlClient.SqlClient, sql)

      expect(yield* run(tables)).toEqual([])
      expect(yield* run(migrate)).toEqual(expected)
      expect(yield* run(tables)).toEqual(expect.arrayContaining(["configuration", "flow", MIGRATIONS_TABLE]))
      expect(yield* run(migrate)).toEqual([])

      yield* sql`INSERT INTO configuration (key, value) VALUES ('k', '{"a": 1}'::jsonb)`
      const rows = yield* sql<{ value: unknown }>`SELECT value FROM configuration WHERE key = 'k'`
      expect(rows).toEqual([{ value: { a: 1 } }])
      const duplicate = yield* Effect.flip(sql`INSERT INTO configuration (key, value) VALUES ('k', '{}'::jsonb)`)
      expect(duplicate._tag).toBe("SqlError")
    }),
    60_000
  )

  it.scoped("two servers migrating one database at once: exactly one applies, neither fails", () =>
    Effect.gen(function* () {
      const database = yield* scopedDatabase({ migrated: false })
      const first = yield* Layer.build(database.connect())
      const second = yield* Layer.build(database.connect())
      const [a, b] = yield* Effect.all(
        [Effect.provide(migrate, first), Effect.provide(migrate, second)],
        { concurrency: 2 }
      )
      expect([...a, ...b]).toEqual(expected)
      expect(a.length === 0 || b.length === 0).toBe(true)
      const applied = yield* Effect.provide(
        Effect.flatMap(SqlClient.SqlClient, (sql) => sql`SELECT migration_id FROM ${sql(MIGRATIONS_TABLE)}`),
        first
      )
      expect(applied).toHaveLength(expected.length)
    }),
    60_000
  )

  it.scoped("reset drops all data and migrates again", () =>
    Effect.gen(function* () {
      const database = yield* scopedDatabase({ migrated: true })
      const context = yield* Layer.build(database.connect())
      const sql = Context.get(context, SqlClient.SqlClient)
      yield* sql`INSERT INTO configuration (key, value) VALUES ('gone', 'true'::jsonb)`
      expect(yield* Effect.provide(reset, context)).toEqual(expected)
      expect(yield* sql`SELECT * FROM configuration`).toEqual([])
      expect(yield* Effect.provide(migrate, context)).toEqual([])
    }),
    60_000
  )

  it.scoped("task runs without a flow run created twice before their key was unique keep their data; the oldest keeps the key", () =>
    Effect.gen(function* () {
      const database = yield* scopedDatabase({ migrated: false })
      const context = yield* Layer.build(database.connect())
      const sql = Context.get(context, SqlClient.SqlClient)
      const before = Object.fromEntries(Object.entries(migrations).filter(([key]) => key < "0019"))
      yield* Effect.provide(Migrator.make({})({ loader: Migrator.fromRecord(before), table: MIGRATIONS_TABLE }), context)
      const run = (id: number, created: string, dynamicKey = "0") =>
        sql`INSERT INTO task_run (id, created, updated, name, task_key, dynamic_key)
            VALUES (${`00000000-0000-4000-8000-00000000000${id}`}, ${created}, ${created}, ${`run-${id}`}, 'k', ${dynamicKey})`
      yield* run(1, "2026-01-01T00:00:02Z")
      yield* run(2, "2026-01-01T00:00:01Z")
      yield* run(3, "2026-01-01T00:00:03Z")
      yield* run(4, "2026-01-01T00:00:00Z", "1")

      expect((yield* Effect.provide(migrate, context))[0]).toEqual([19, "task_run_without_flow_run_key"])
      const rows = yield* sql<{ name: string; dynamic_key: string }>`SELECT name, dynamic_key FROM task_run ORDER BY name`
      expect(rows).toEqual([
        { name: "run-1", dynamic_key: "0:00000000-0000-4000-8000-000000000001" },
        { name: "run-2", dynamic_key: "0" },
        { name: "run-3", dynamic_key: "0:00000000-0000-4000-8000-000000000003" },
        { name: "run-4", dynamic_key: "1" }
      ])
      const duplicate = yield* Effect.flip(run(5, "2026-01-01T00:00:04Z"))
      expect((duplicate.cause as { code?: string }).code).toBe("23505")
    }),
    60_000
  )

  it.scoped("the flow-run rollup per deployment (0027) is filled from the runs already there; the deltas not folded yet go into the rollup", () =>
    Effect.gen(function* () {
      const database = yield* scopedDatabase({ migrated: false })
      const context = yield* Layer.build(database.connect())
      const sql = Context.get(context, SqlClient.SqlClient)
      const before = Object.fromEntries(Object.entries(migrations).filter(([key]) => key < "0027"))
      yield* Effect.provide(Migrator.make({})({ loader: Migrator.fromRecord(before), table: MIGRATIONS_TABLE }), context)
      const flow = "00000000-0000-4000-8000-00000000f000"
      const deployments = ["00000000-0000-4000-8000-00000000d001", "00000000-0000-4000-8000-00000000d002", "00000000-0000-4000-8000-00000000d003"]
      yield* sql`INSERT INTO flow (id, created, updated, name) VALUES (${flow}, now(), now(), 'f')`
      // 210 runs 7 minutes apart, each of three deployments or none, in every kind of state.
      yield* sql`
        INSERT INTO flow_run (id, created, updated, name, flow_id, deployment_id, state_type, state_name, state_timestamp,
          expected_start_time, start_time, total_run_time)
        SELECT gen_random_uuid(), now(), now(), 'run-' || i, ${flow},
          (ARRAY[${deployments[0]!}, ${deployments[1]!}, ${deployments[2]!}, NULL]::uuid[])[1 + i % 4],
          (ARRAY['SCHEDULED', 'PENDING', 'RUNNING', 'COMPLETED', 'FAILED', 'CANCELLED', 'SCHEDULED'])[1 + i % 7],
          (ARRAY['Scheduled', 'Pending', 'Running', 'Completed', 'Failed', 'Cancelled', 'Late'])[1 + i % 7],
          '2030-01-01T00:00:00Z'::timestamptz + i * interval '7 minutes' + interval '1 minute',
          '2030-01-01T00:00:00Z'::timestamptz + i * interval '7 minutes',
          CASE WHEN i % 7 IN (2, 3, 4) THEN '2030-01-01T00:00:00Z'::timestamptz + i * interval '7 minutes' + (i % 5) * interval '1 second' END,
          CASE WHEN i % 7 IN (3, 4) THEN i * 1.25 ELSE 0 END
        FROM generate_series(0, 209) AS i
      `
      // Changes the triggers of 0026 append as deltas (folded about once in 256), and a deletion (folded).
      yield* sql`UPDATE flow_run SET state_type = 'COMPLETED', state_name = 'Completed', total_run_time = 3 WHERE state_type = 'RUNNING' AND name LIKE 'run-1%'`
      yield* sql`DELETE FROM flow_run WHERE name IN ('run-5', 'run-6', 'run-77')`
      // A change also folds every delta left, once in 256 at random: changed again until some are left.
      let deltas = 0
      for (const runs of ["run-2%", "run-3%", "run-4%", "run-6%"]) {
        yield* sql`UPDATE flow_run SET state_type = 'PENDING', state_name = 'Pending' WHERE state_name = 'Late' AND name LIKE ${runs}`
        deltas = (yield* sql<{ deltas: number }>`SELECT count(*)::int AS deltas FROM flow_run_rollup_delta`)[0]!.deltas
        if (deltas > 0) break
      }
      expect(deltas).toBeGreaterThan(0)

      expect((yield* Effect.provide(migrate, context))[0]).toEqual([27, "flow_run_rollup_deployments"])
      expect(yield* sql`SELECT 1 FROM flow_run_rollup_delta`).toEqual([])
      const per = yield* sql<{ deployment_id: string; runs: string }>`
        SELECT deployment_id, sum(count_runs) AS runs FROM flow_run_rollup_deployment GROUP BY 1 ORDER BY 1
      `
      expect(per.map((row) => [row.deployment_id, Number(row.runs)])).toEqual(
        deployments.map((id, i) => [id, Array.from({ length: 210 }, (_, n) => n).filter((n) => n % 4 === i && ![5, 6, 77].includes(n)).length])
      )
      yield* Effect.provideService(rollupIsExact, SqlClient.SqlClient, sql)
      // The triggers of 0027 keep it: a run changing deployment, losing it, gaining one; then folded.
      yield* sql`UPDATE flow_run SET deployment_id = ${deployments[2]!} WHERE name = 'run-8'`
      yield* sql`UPDATE flow_run SET deployment_id = NULL WHERE name IN ('run-9', 'run-10')`
      yield* sql`UPDATE flow_run SET deployment_id = ${deployments[0]!}, state_type = 'RUNNING', state_name = 'Running' WHERE name = 'run-11'`
      yield* Effect.provideService(rollupIsExact, SqlClient.SqlClient, sql)
      yield* sql`SELECT flow_run_rollup_fold()`
      yield* Effect.provideService(rollupIsExact, SqlClient.SqlClient, sql)
    }),
    60_000
  )

  it.scoped("the flow-run rollup per hour (0029) is the quarter hours added up per hour; the deltas not folded yet stay, and are folded into both", () =>
    Effect.gen(function* () {
      const database = yield* scopedDatabase({ migrated: false })
      const context = yield* Layer.build(database.connect())
      const sql = Context.get(context, SqlClient.SqlClient)
      const before = Object.fromEntries(Object.entries(migrations).filter(([key]) => key < "0029"))
      yield* Effect.provide(Migrator.make({})({ loader: Migrator.fromRecord(before), table: MIGRATIONS_TABLE }), context)
      const flow = "00000000-0000-4000-8000-00000000f000"
      const deployment = "00000000-0000-4000-8000-00000000d001"
      yield* sql`INSERT INTO flow (id, created, updated, name) VALUES (${flow}, now(), now(), 'f')`
      // 210 runs 7 minutes apart (a day and more), in every kind of state, some Running with a state
      // timestamp ahead of the others.
      yield* sql`
        INSERT INTO flow_run (id, created, updated, name, flow_id, deployment_id, state_type, state_name, state_timestamp,
          expected_start_time, start_time, total_run_time)
        SELECT gen_random_uuid(), now(), now(), 'run-' || i, ${flow}, CASE WHEN i % 2 = 0 THEN ${deployment}::uuid END,
          (ARRAY['SCHEDULED', 'PENDING', 'RUNNING', 'COMPLETED', 'FAILED', 'CANCELLED', 'SCHEDULED'])[1 + i % 7],
          (ARRAY['Scheduled', 'Pending', 'Running', 'Completed', 'Failed', 'Cancelled', 'Late'])[1 + i % 7],
          '2030-01-01T00:00:00Z'::timestamptz + i * interval '7 minutes' + (i % 11) * interval '1 minute',
          '2030-01-01T00:00:00Z'::timestamptz + i * interval '7 minutes',
          CASE WHEN i % 7 IN (2, 3, 4) THEN '2030-01-01T00:00:00Z'::timestamptz + i * interval '7 minutes' + (i % 5) * interval '1 second' END,
          CASE WHEN i % 7 IN (3, 4) THEN i * 1.25 ELSE 0 END
        FROM generate_series(0, 209) AS i
      `
      // Folded by a deletion, then changes left as deltas (a fold about once in 256).
      yield* sql`DELETE FROM flow_run WHERE name IN ('run-5', 'run-6', 'run-77')`
      yield* sql`UPDATE flow_run SET state_type = 'COMPLETED', state_name = 'Completed', total_run_time = 3 WHERE state_type = 'RUNNING' AND name LIKE 'run-1%'`
      yield* sql`UPDATE flow_run SET state_type = 'PENDING', state_name = 'Pending' WHERE state_name = 'Late' AND name LIKE 'run-2%'`
      const countDeltas = sql<{ n: number }>`SELECT count(*)::int AS n FROM flow_run_rollup_delta`
      // The fold comes at random, about once in 256 changes: when the last change happened to fold
      // them all, one more change is left as a delta (five tries).
      for (let tries = 0; tries < 5 && (yield* countDeltas)[0]!.n === 0; tries++) {
        yield* sql`UPDATE flow_run SET total_run_time = total_run_time + 1 WHERE name = 'run-3'`
      }
      const deltas = yield* countDeltas
      expect(deltas[0]!.n).toBeGreaterThan(0)
      const rows = `slot, state_type, state_name, count_runs::text, sum_run_time::text, sum_lateness::text, count_waiting::text,
        sum_waiting_since::text, count_running::text, sum_running_since::text, running_since_max`
      const perHour = yield* sql.unsafe(`
        SELECT ${rows} FROM (
          SELECT date_bin('1 hour', slot, '2000-01-01T00:00:00Z') AS slot, state_type, state_name, sum(count_runs) AS count_runs,
            sum(sum_run_time) AS sum_run_time, sum(sum_lateness) AS sum_lateness, sum(count_waiting) AS count_waiting,
            sum(sum_waiting_since) AS sum_waiting_since, sum(count_running) AS count_running,
            sum(sum_running_since) AS sum_running_since, max(running_since_max) AS running_since_max
          FROM flow_run_rollup GROUP BY 1, 2, 3
        ) hours ORDER BY 1, 2, 3
      `)
      expect(perHour.length).toBeGreaterThan(25 * 3)

      expect((yield* Effect.provide(migrate, context))[0]).toEqual([29, "flow_run_rollup_hours"])
      // The hour table is the quarter hours added up, bounds included; the deltas are still there.
      expect(yield* sql.unsafe(`SELECT ${rows} FROM flow_run_rollup_hour ORDER BY 1, 2, 3`)).toEqual(perHour)
      expect((yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM flow_run_rollup_delta`)[0]!.n).toBe(deltas[0]!.n)
      yield* Effect.provideService(rollupIsExact, SqlClient.SqlClient, sql)
      // The triggers and the fold keep it: runs finishing, moving to another hour, deleted; then folded.
      yield* sql`UPDATE flow_run SET state_type = 'COMPLETED', state_name = 'Completed' WHERE state_type = 'PENDING' AND name LIKE 'run-3%'`
      yield* sql`UPDATE flow_run SET expected_start_time = expected_start_time + interval '95 minutes' WHERE name IN ('run-40', 'run-41', 'run-42')`
      yield* Effect.provideService(rollupIsExact, SqlClient.SqlClient, sql)
      yield* sql`SELECT flow_run_rollup_fold()`
      expect(yield* sql`SELECT 1 FROM flow_run_rollup_delta`).toEqual([])
      yield* Effect.provideService(rollupIsExact, SqlClient.SqlClient, sql)
      // Every run of an hour gone: its row goes with its quarter hours'.
      const [{ hour }] = yield* sql<{ hour: Date }>`SELECT min(slot) AS hour FROM flow_run_rollup_hour`
      yield* sql`DELETE FROM flow_run WHERE expected_start_time >= ${hour} AND expected_start_time < ${hour}::timestamptz + interval '1 hour'`
      expect(yield* sql`SELECT 1 FROM flow_run_rollup_hour WHERE slot = ${hour}`).toEqual([])
      yield* Effect.provideService(rollupIsExact, SqlClient.SqlClient, sql)
      yield* sql`TRUNCATE flow_run CASCADE`
      expect(yield* sql`SELECT 1 FROM flow_run_rollup_hour`).toEqual([])
    }),
    60_000
  )

  it.scoped("an unreachable PostgreSQL stops start-up with one clear line", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(
        Layer.build(layerFromSettings).pipe(
          Effect.provide(
            settingsLayer({
              "server.database.connection_url": "postgresql://baton:secret@127.0.0.1:1/baton",
              "server.database.sqlalchemy.pool_timeout": 2
            })
          )
        )
      )
      expect(error._tag).toBe("DatabaseError")
      expect(error.message).toMatch(/^Cannot connect to PostgreSQL at 127\.0\.0\.1:1\/baton: /)
      expect(error.message).not.toContain("secret")
      expect(error.message).not.toContain("\n")
    }),
    60_000
  )
})
