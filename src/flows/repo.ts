/** Flows in SQL. */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { sqlErrorsAsDefects } from "../database/errors.ts"
import { AsGiven, IdRow, type SortedPage, countWhere, findRowBy, pageOf } from "../database/rows.ts"
import { queryCondition, type RelatedFilters } from "../queries/query.ts"
import { newId } from "../domain/ids.ts"
import { now } from "../domain/time.ts"
import { Flow, type FlowFilter, type FlowSort } from "./schemas.ts"
import { traced } from "../domain/traced.ts"

/** A row of `flow`: its wire record, decoded (its timestamps Dates, its tags and labels parsed jsonb). */
export const FlowRow = Schema.typeSchema(Flow)

interface NewFlow {
  readonly name: string
  readonly tags: ReadonlyArray<string>
  readonly labels: Flow["labels"]
}

/** The filters a flow query combines: the flows' own and those of related runs, deployments and pools. */
export type FlowQuery = RelatedFilters

const orderBy: Record<FlowSort, string> = {
  CREATED_DESC: "flow.created DESC, flow.id",
  UPDATED_DESC: "flow.updated DESC, flow.id",
  NAME_ASC: "flow.name ASC, flow.id",
  NAME_DESC: "flow.name DESC, flow.id"
}

export class FlowsRepo extends Effect.Service<FlowsRepo>()("baton/FlowsRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const where = (query: FlowQuery) => queryCondition(sql, "flow", query)

    const insert = SqlSchema.findOne({
      Request: AsGiven<NewFlow & { readonly id: string; readonly at: Date }>(),
      Result: FlowRow,
      execute: (flow) =>
        sql`
          INSERT INTO flow (id, created, updated, name, tags, labels)
          VALUES (${flow.id}, ${flow.at}, ${flow.at}, ${flow.name}, ${JSON.stringify(flow.tags)}::jsonb,
                  ${JSON.stringify(flow.labels)}::jsonb)
          ON CONFLICT (name) DO NOTHING
          RETURNING *
        `
    })

    const find = findRowBy(sql, "flow", "id", FlowRow)

    const findByName = findRowBy(sql, "flow", "name", FlowRow)

    /** Creates the flow, or returns the one with that name; says which. */
    const create = traced("FlowsRepo.create")(function* (input: NewFlow) {
      const inserted = yield* insert({ ...input, id: yield* newId, at: yield* now })
      if (Option.isSome(inserted)) return { flow: inserted.value, created: true }
      // The name was taken: answer the flow that has it (one deleted in the instant since is a defect).
      const existing = yield* findByName(input.name)
      return { flow: Option.getOrThrow(existing), created: false }
    })

    /** Sets the given fields; false when there is no such flow. */
    const update = traced("FlowsRepo.update")(function* (
      id: string,
      changes: { readonly tags?: ReadonlyArray<string> | undefined }
    ) {
      const at = yield* now
      const rows = yield* sql`
        UPDATE flow SET updated = ${at}
          ${changes.tags !== undefined ? sql`, tags = ${JSON.stringify(changes.tags)}::jsonb` : sql``}
        WHERE id = ${id}
        RETURNING id
      `
      return rows.length > 0
    })

    const page = pageOf(sql, "flow", FlowRow)
    const filter = (options: { readonly query: FlowQuery } & SortedPage<FlowSort>) => page(where(options.query), orderBy[options.sort], options)

    const counted = countWhere(sql, "flow")
    const count = (query: FlowQuery) => counted(where(query))

    const remove = (id: string) =>
      Effect.map(sql`DELETE FROM flow WHERE id = ${id} RETURNING id`, (rows) => rows.length > 0)

    const deleteMatching = SqlSchema.findAll({
      Request: AsGiven<{ readonly flows: FlowFilter | null | undefined; readonly limit: number }>(),
      Result: IdRow,
      execute: ({ flows, limit }) =>
        sql`
          DELETE FROM flow WHERE id IN (SELECT id FROM flow WHERE ${where({ flows })} LIMIT ${limit})
          RETURNING id
        `
    })

    /** Deletes up to `limit` flows matching the filter; returns their ids. */
    const removeMatching = (flows: FlowFilter | null | undefined, limit: number) =>
      Effect.map(deleteMatching({ flows, limit }), (rows) => rows.map((r) => r.id))

    return sqlErrorsAsDefects({ create, find, findByName, update, filter, count, remove, removeMatching })
  })
}) {}
