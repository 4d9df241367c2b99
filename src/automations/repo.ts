/** Automations and the resources they relate to, in SQL. */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Schema } from "effect"
import { sqlErrorAsDefect, sqlErrorsAsDefects } from "../database/errors.ts"
import { AsGiven, type SortedPage, countWhere, findRowBy, findRowsByIds, pageOf } from "../database/rows.ts"
import * as Notifications from "../database/notifications.ts"
import { newId } from "../domain/ids.ts"
import { now } from "../domain/time.ts"
import { isObject } from "../domain/schemas.ts"
import { type Action, Automation, AutomationFilter, type AutomationSort, type AutomationUpdate, type Trigger } from "./schemas.ts"
import { traced } from "../domain/traced.ts"

/**
 * A trigger or action as stored: what the body schema decoded (and checked) before it was written.
 * Read back, its tagged shape is checked; its rules (templates that parse, windows, targets) were the
 * write's, and are not run again on every read.
 */
const stored = <A extends { readonly type: string }>(identifier: string) =>
  Schema.declare((value): value is A => isObject(value) && typeof value.type === "string", { identifier })

/** A row of `automation`: its wire record, decoded (its timestamps Dates, its jsonb parsed). */
export const AutomationRow = Schema.typeSchema(Schema.Struct({
  ...Automation.fields,
  trigger: stored<Trigger>("StoredTrigger"),
  actions: Schema.Array(stored<Action>("StoredAction")),
  actions_on_trigger: Schema.Array(stored<Action>("StoredAction")),
  actions_on_resolve: Schema.Array(stored<Action>("StoredAction"))
}))

const SnapshotRow = Schema.Struct({ updated: Schema.NullOr(Schema.DateFromSelf), count: Schema.NumberFromString })

const orderBy: Record<AutomationSort, string> = {
  CREATED_DESC: "automation.created DESC, automation.id",
  UPDATED_DESC: "automation.updated DESC, automation.id",
  NAME_ASC: "automation.name ASC, automation.id",
  NAME_DESC: "automation.name DESC, automation.id"
}

/** What an automation holds besides its id and timestamps. */
export type AutomationFields = AutomationUpdate

const json = (value: unknown) => JSON.stringify(value)

/** Which automations changed since a look: the newest `updated` and how many there are. */
export interface AutomationsSnapshot {
  readonly updated: number | null
  readonly count: number
}

export class AutomationsRepo extends Effect.Service<AutomationsRepo>()("baton/AutomationsRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const where = (filter: AutomationFilter | null | undefined) => AutomationFilter.compile(sql, filter)

    const columns = (fields: AutomationFields) => ({
      name: fields.name,
      description: fields.description,
      enabled: fields.enabled,
      tags: json(fields.tags),
      trigger: json(fields.trigger),
      actions: json(fields.actions),
      actions_on_trigger: json(fields.actions_on_trigger),
      actions_on_resolve: json(fields.actions_on_resolve)
    })

    const insert = SqlSchema.single({
      Request: AsGiven<ReturnType<typeof columns> & { readonly id: string; readonly created: Date; readonly updated: Date }>(),
      Result: AutomationRow,
      execute: (row) => sql`INSERT INTO automation ${sql.insert(row)} RETURNING *`
    })

    const create = traced("AutomationsRepo.create")(function* (fields: AutomationFields) {
      const at = yield* now
      return yield* insert({ id: yield* newId, created: at, updated: at, ...columns(fields) })
    })

    const find = findRowBy(sql, "automation", "id", AutomationRow)

    const findMany = findRowsByIds(sql, "automation", AutomationRow)
    const readMany = (ids: ReadonlyArray<string>) => (ids.length === 0 ? Effect.succeed([] as ReadonlyArray<Automation>) : findMany(ids))

    /** Every automation, for the triggers service to load. */
    const all = SqlSchema.findAll({ Request: Schema.Void, Result: AutomationRow, execute: () => sql`SELECT * FROM automation` })()

    const page = pageOf(sql, "automation", AutomationRow)
    const filter = (options: { readonly filter: AutomationFilter | null | undefined } & SortedPage<AutomationSort>) => page(where(options.filter), orderBy[options.sort], options)

    const count = countWhere(sql, "automation")(sql`TRUE`)

    const snapshot = Effect.map(
      SqlSchema.single({
        Request: Schema.Void,
        Result: SnapshotRow,
        execute: () => sql`SELECT max(updated) AS updated, count(*) AS count FROM automation`
      })(),
      (row): AutomationsSnapshot => ({ updated: row.updated?.getTime() ?? null, count: row.count })
    )

    /** Replaces every field; false when there is no such automation. */
    const replace = traced("AutomationsRepo.replace")(function* (id: string, fields: AutomationFields) {
      const at = yield* now
      const rows = yield* sql`UPDATE automation SET ${sql.update({ ...columns(fields), updated: at })} WHERE id = ${id} RETURNING id`
      // Its triggers have new ids: what the old ones were counting no longer applies.
      yield* sql`DELETE FROM automation_bucket WHERE automation_id = ${id}`
      yield* sql`DELETE FROM composite_trigger_child_firing WHERE automation_id = ${id}`
      return rows.length > 0
    })

    const setEnabled = traced("AutomationsRepo.setEnabled")(function* (id: string, enabled: boolean) {
      const at = yield* now
      const rows = yield* sql`UPDATE automation SET enabled = ${enabled}, updated = ${at} WHERE id = ${id} RETURNING id`
      return rows.length > 0
    })

    /** Deletes the automations (their buckets, firings and relations go with them); the deleted ones. */
    const deleteMany = SqlSchema.findAll({
      Request: Schema.Array(Schema.String),
      Result: AutomationRow,
      execute: (ids) => sql`DELETE FROM automation WHERE id = ANY(${ids}::uuid[]) RETURNING *`
    })
    const remove = (ids: ReadonlyArray<string>) => (ids.length === 0 ? Effect.succeed([] as ReadonlyArray<Automation>) : deleteMany(ids))

    /** Relates the automation to a resource; once owned by it, it stays owned. */
    const relate = traced("AutomationsRepo.relate")(function* (automationId: string, resourceId: string, owned: boolean) {
      const at = yield* now
      yield* sql`
        INSERT INTO automation_related_resource (id, created, updated, automation_id, resource_id, automation_owned_by_resource)
        VALUES (${yield* newId}, ${at}, ${at}, ${automationId}, ${resourceId}, ${owned})
        ON CONFLICT (automation_id, resource_id) DO UPDATE SET
          automation_owned_by_resource = automation_related_resource.automation_owned_by_resource OR EXCLUDED.automation_owned_by_resource,
          updated = EXCLUDED.updated
      `
    })

    /** The deployments the automation runs are related to it, and no others (ownership is kept). */
    const relateDeployments = traced("AutomationsRepo.relateDeployments")(function* (
      automationId: string,
      deploymentIds: ReadonlyArray<string>
    ) {
      yield* sql`
        DELETE FROM automation_related_resource
        WHERE automation_id = ${automationId} AND resource_id LIKE 'prefect.deployment.%' AND NOT automation_owned_by_resource
      `
      for (const id of new Set(deploymentIds)) yield* relate(automationId, `prefect.deployment.${id}`, false)
    })

    const related = SqlSchema.findAll({
      Request: AsGiven<{ readonly resourceId: string; readonly ownedOnly?: boolean; readonly createdBefore?: Date }>(),
      Result: AutomationRow,
      execute: (options) =>
        sql`
          SELECT automation.* FROM automation
          JOIN automation_related_resource r ON r.automation_id = automation.id
          WHERE r.resource_id = ${options.resourceId}
            ${options.ownedOnly ? sql`AND r.automation_owned_by_resource` : sql``}
            ${options.createdBefore ? sql`AND automation.created <= ${options.createdBefore}` : sql``}
          ORDER BY automation.created, automation.id
        `
    })
    const relatedTo = (resourceId: string, options: { readonly ownedOnly?: boolean; readonly createdBefore?: Date } = {}) =>
      related({ ...options, resourceId })

    /**
     * Announces a change on a PostgreSQL channel (database/notifications.ts), for other replicas'
     * triggers services. Best effort: the change stands without it, so a failure is logged.
     */
    const notify = (channel: string, payload: string) =>
      Effect.provideService(Notifications.notify(channel, payload), SqlClient.SqlClient, sql).pipe(
        Effect.catchAll((error) => Effect.logWarning("Automation change could not be announced to other replicas", error))
      )

    /** Whether other processes may share this database (a PostgreSQL server, not the embedded one). */
    const sharedServer = Effect.provideService(Notifications.sharedServer, SqlClient.SqlClient, sql)

    return {
      ...sqlErrorsAsDefects({ notify, create, find, readMany, filter, replace, setEnabled, remove, relate, relateDeployments, relatedTo }),
      // Effects rather than methods, which the wrapper leaves alone: their failed statements made defects here.
      sharedServer: sqlErrorAsDefect(sharedServer),
      all: sqlErrorAsDefect(all),
      count: sqlErrorAsDefect(count),
      snapshot: sqlErrorAsDefect(snapshot)
    }
  })
}) {}
