/** Flows in SQL. */
import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import { sqlErrorsAsDefects } from "../database/errors.ts"
import { queryCondition, type RelatedFilters } from "../queries/query.ts"
import { newId } from "../domain/ids.ts"
import { now } from "../domain/time.ts"
import type { Flow, FlowFilter, FlowSort } from "./schemas.ts"

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

    /** Creates the flow, or returns the one with that name; says which. */
    const create = Effect.fn("FlowsRepo.create")(function* (input: {
      readonly name: string
      readonly tags: ReadonlyArray<string>
      readonly labels: Flow["labels"]
    }) {
      const id = yield* newId
      const at = yield* now
      const inserted = yield* sql<Flow>`
        INSERT INTO flow (id, created, updated, name, tags, labels)
        VALUES (${id}, ${at}, ${at}, ${input.name}, ${JSON.stringify(input.tags)}::jsonb, ${JSON.stringify(input.labels)}::jsonb)
        ON CONFLICT (name) DO NOTHING
        RETURNING *
      `
      if (inserted.length > 0) return { flow: inserted[0]!, created: true }
      const existing = yield* sql<Flow>`SELECT * FROM flow WHERE name = ${input.name}`
      return { flow: existing[0]!, created: false }
    })

    const find = (id: string) =>
      Effect.map(sql<Flow>`SELECT * FROM flow WHERE id = ${id}`, (rows) => Option.fromNullable(rows[0]))

    const findByName = (name: string) =>
      Effect.map(sql<Flow>`SELECT * FROM flow WHERE name = ${name}`, (rows) => Option.fromNullable(rows[0]))

    /** Sets the given fields; false when there is no such flow. */
    const update = Effect.fn("FlowsRepo.update")(function* (
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

    const filter = (options: {
      readonly query: FlowQuery
      readonly sort: FlowSort
      readonly offset: number
      readonly limit: number
    }) =>
      sql<Flow>`
        SELECT * FROM flow
        WHERE ${where(options.query)}
        ORDER BY ${sql.unsafe(orderBy[options.sort])}
        LIMIT ${options.limit} OFFSET ${options.offset}
      `

    const count = (query: FlowQuery) =>
      Effect.map(sql<{ count: string }>`SELECT count(*) AS count FROM flow WHERE ${where(query)}`, (rows) =>
        Number(rows[0]!.count)
      )

    const remove = (id: string) =>
      Effect.map(sql`DELETE FROM flow WHERE id = ${id} RETURNING id`, (rows) => rows.length > 0)

    /** Deletes up to `limit` flows matching the filter; returns their ids. */
    const removeMatching = (flows: FlowFilter | null | undefined, limit: number) =>
      Effect.map(
        sql<{ id: string }>`
          DELETE FROM flow WHERE id IN (SELECT id FROM flow WHERE ${where({ flows })} LIMIT ${limit})
          RETURNING id
        `,
        (rows) => rows.map((r) => r.id)
      )

    return sqlErrorsAsDefects({ create, find, findByName, update, filter, count, remove, removeMatching })
  })
}) {}
