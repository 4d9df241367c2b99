/** The processes using the database, in SQL. */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Schema } from "effect"
import { sqlErrorsAsDefects } from "../database/errors.ts"
import { AsGiven } from "../database/rows.ts"

export const InstanceRow = Schema.Struct({
  id: Schema.String,
  hostname: Schema.String,
  pid: Schema.Number,
  version: Schema.String,
  started: Schema.DateFromSelf,
  heartbeat: Schema.DateFromSelf,
  serves_api: Schema.Boolean,
  services: Schema.Array(Schema.String),
  singletons: Schema.Array(Schema.String),
  /** The services it leads (their locks it holds). */
  leads_services: Schema.Array(Schema.String),
  lease_storage: Schema.String,
  messaging_broker: Schema.String
})
export type InstanceRow = typeof InstanceRow.Type

export class InstancesRepo extends Effect.Service<InstancesRepo>()("baton/InstancesRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const register = (row: InstanceRow) =>
      Effect.asVoid(sql`
        INSERT INTO baton_instance (id, hostname, pid, version, started, heartbeat, serves_api, services, singletons, leads,
          leads_services, lease_storage, messaging_broker)
        VALUES (${row.id}, ${row.hostname}, ${row.pid}, ${row.version}, ${row.started}, ${row.heartbeat}, ${row.serves_api},
          ${JSON.stringify(row.services)}::jsonb, ${JSON.stringify(row.singletons)}::jsonb, ${row.leads_services.length > 0},
          ${JSON.stringify(row.leads_services)}::jsonb, ${row.lease_storage},
          ${row.messaging_broker})
      `)

    /** The instance is alive at `at` and leads `leading`; false when its row is gone (pruned: it registers again). */
    const beat = (id: string, at: Date, leading: ReadonlyArray<string>) =>
      Effect.map(
        sql`UPDATE baton_instance SET heartbeat = ${at}, leads = ${leading.length > 0}, leads_services = ${JSON.stringify(leading)}::jsonb
          WHERE id = ${id} RETURNING id`,
        (rows) => rows.length > 0
      )

    const remove = (id: string) => Effect.asVoid(sql`DELETE FROM baton_instance WHERE id = ${id}`)

    /** Instances whose last heartbeat came after `since`, oldest first. */
    const live = SqlSchema.findAll({
      Request: Schema.DateFromSelf,
      Result: InstanceRow,
      execute: (since) => sql`SELECT * FROM baton_instance WHERE heartbeat > ${since} ORDER BY started, id`
    })

    /** Forgets the instances silent since `before` (killed without a goodbye). */
    const prune = SqlSchema.void({
      Request: AsGiven<Date>(),
      execute: (before) => sql`DELETE FROM baton_instance WHERE heartbeat < ${before}`
    })

    return sqlErrorsAsDefects({ register, beat, remove, live, prune })
  })
}) {}
