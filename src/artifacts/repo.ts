/**
 * Artifacts in SQL, with the latest artifact of each key (artifact_collection) kept in step: a new
 * keyed artifact becomes its key's latest, editing the latest edits the collection, and deleting the
 * latest makes the newest remaining one latest (or removes the key).
 */
import { SqlClient, SqlSchema, type Statement } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { sqlErrorsAsDefects } from "../database/errors.ts"
import { AsGiven, type SortedPage, countWhere, findRowBy, pageOf } from "../database/rows.ts"
import { queryCondition, type RelatedFilters } from "../queries/query.ts"
import { newId } from "../domain/ids.ts"
import { now } from "../domain/time.ts"
import {
  Artifact,
  ArtifactCollection,
  type ArtifactCreate,
  ArtifactCollectionFilter,
  ArtifactFilter,
  type ArtifactSort,
  GraphArtifact
} from "./schemas.ts"
import { traced } from "../domain/traced.ts"

/** A row of `artifact`: its wire record, decoded (its timestamps Dates, its data and metadata parsed jsonb). */
export const ArtifactRow = Schema.typeSchema(Artifact)

/** A row of `artifact_collection`: its wire record, decoded. */
export const ArtifactCollectionRow = Schema.typeSchema(ArtifactCollection)

/** An artifact as a flow run's graph lists it, with the task run it belongs to. */
const GraphArtifactRow = Schema.extend(Schema.typeSchema(GraphArtifact), Schema.Struct({ task_run_id: Schema.NullOr(Schema.String) }))

const orderBy = (table: string): Record<ArtifactSort, string> => ({
  CREATED_DESC: `${table}.created DESC, ${table}.id DESC`,
  UPDATED_DESC: `${table}.updated DESC, ${table}.id DESC`,
  ID_DESC: `${table}.id DESC`,
  KEY_DESC: `${table}.key DESC NULLS LAST, ${table}.id DESC`,
  KEY_ASC: `${table}.key ASC NULLS FIRST, ${table}.id DESC`
})

export type ArtifactQuery = RelatedFilters & { readonly artifacts?: unknown }

type ArtifactPage = ArtifactQuery & SortedPage<ArtifactSort>

const json = (value: unknown) => (value === null || value === undefined ? null : JSON.stringify(value))

export class ArtifactsRepo extends Effect.Service<ArtifactsRepo>()("baton/ArtifactsRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    /** A query's condition on `table`: its own `artifacts` filter and its flows, runs and deployments. */
    const where = (table: "artifact" | "artifact_collection", query: ArtifactQuery): Statement.Fragment =>
      sql.and([
        // The body schema of each route decoded `artifacts` with the filter of its table.
        table === "artifact"
          ? ArtifactFilter.compile(sql, query.artifacts as typeof ArtifactFilter.Type | null | undefined)
          : ArtifactCollectionFilter.compile(sql, query.artifacts as typeof ArtifactCollectionFilter.Type | null | undefined),
        queryCondition(sql, table, { flows: query.flows, flow_runs: query.flow_runs, task_runs: query.task_runs, deployments: query.deployments })
      ])

    const insert = SqlSchema.single({
      Request: AsGiven<ArtifactCreate & { readonly id: string; readonly at: Date }>(),
      Result: ArtifactRow,
      execute: (input) =>
        sql`
          INSERT INTO artifact (id, created, updated, key, type, description, data, metadata_, flow_run_id, task_run_id)
          VALUES (${input.id}, ${input.at}, ${input.at}, ${input.key}, ${input.type}, ${input.description},
                  ${json(input.data)}::jsonb, ${json(input.metadata_)}::jsonb, ${input.flow_run_id}, ${input.task_run_id})
          RETURNING *
        `
    })

    const create = traced("ArtifactsRepo.create")(function* (input: ArtifactCreate) {
      const id = yield* newId
      const at = yield* now
      return yield* sql.withTransaction(
        Effect.gen(function* () {
          const artifact = yield* insert({ ...input, id, at })
          if (input.key !== null) {
            yield* sql`
              INSERT INTO artifact_collection (id, created, updated, key, latest_id, type, description, data, metadata_,
                                               flow_run_id, task_run_id)
              VALUES (${yield* newId}, ${at}, ${at}, ${input.key}, ${id}, ${input.type}, ${input.description},
                      ${json(input.data)}::jsonb, ${json(input.metadata_)}::jsonb, ${input.flow_run_id}, ${input.task_run_id})
              ON CONFLICT (key) DO UPDATE SET latest_id = EXCLUDED.latest_id, updated = EXCLUDED.updated,
                type = EXCLUDED.type, description = EXCLUDED.description, data = EXCLUDED.data,
                metadata_ = EXCLUDED.metadata_, flow_run_id = EXCLUDED.flow_run_id, task_run_id = EXCLUDED.task_run_id
            `
          }
          return artifact
        })
      )
    })

    const find = findRowBy(sql, "artifact", "id", ArtifactRow)

    /** The latest artifact of the key (the collection's own record). */
    const findLatest = findRowBy(sql, "artifact_collection", "key", ArtifactCollectionRow)

    const deleteRow = SqlSchema.findOne({
      Request: Schema.String,
      Result: ArtifactRow,
      execute: (id) => sql`DELETE FROM artifact WHERE id = ${id} RETURNING *`
    })

    const newestOfKey = SqlSchema.findOne({
      Request: Schema.String,
      Result: ArtifactRow,
      execute: (key) => sql`SELECT * FROM artifact WHERE key = ${key} ORDER BY created DESC, id DESC LIMIT 1`
    })

    /** Sets the given fields on the artifact, and on its key's collection when it is the latest; false without it. */
    const update = traced("ArtifactsRepo.update")(function* (id: string, changes: Readonly<Record<string, unknown>>) {
      const at = yield* now
      const columns = { ...changes, updated: at }
      return yield* sql.withTransaction(
        Effect.gen(function* () {
          const rows = yield* sql`UPDATE artifact SET ${sql.update(columns)} WHERE id = ${id} RETURNING id`
          yield* sql`UPDATE artifact_collection SET ${sql.update(columns)} WHERE latest_id = ${id}`
          return rows.length > 0
        })
      )
    })

    /** Deletes the artifact; when it was its key's latest, the newest remaining version takes over. */
    const remove = (id: string) =>
      sql.withTransaction(
        Effect.gen(function* () {
          const found = yield* deleteRow(id)
          if (Option.isNone(found)) return false
          const deleted = found.value
          if (deleted.key === null) return true
          const latest = yield* sql`SELECT id FROM artifact_collection WHERE key = ${deleted.key} AND latest_id = ${id}`
          if (latest.length === 0) return true
          const next = yield* newestOfKey(deleted.key)
          if (Option.isNone(next)) {
            yield* sql`DELETE FROM artifact_collection WHERE key = ${deleted.key}`
          } else {
            const n = next.value
            yield* sql`
              UPDATE artifact_collection SET latest_id = ${n.id}, created = ${n.created}, updated = ${n.updated},
                type = ${n.type}, description = ${n.description}, data = ${json(n.data)}::jsonb,
                metadata_ = ${json(n.metadata_)}::jsonb, flow_run_id = ${n.flow_run_id}, task_run_id = ${n.task_run_id}
              WHERE key = ${deleted.key}
            `
          }
          return true
        })
      )

    const artifacts = pageOf(sql, "artifact", ArtifactRow)
    const artifactCount = countWhere(sql, "artifact")
    const filter = (query: ArtifactPage) => artifacts(where("artifact", query), orderBy("artifact")[query.sort], query)
    const count = (query: ArtifactQuery) => artifactCount(where("artifact", query))

    // The latest artifact of each key.
    const latest = pageOf(sql, "artifact_collection", ArtifactCollectionRow)
    const latestCount = countWhere(sql, "artifact_collection")
    const filterLatest = (query: ArtifactPage) =>
      latest(where("artifact_collection", query), orderBy("artifact_collection")[query.sort], query)
    const countLatest = (query: ArtifactQuery) => latestCount(where("artifact_collection", query))

    const graphRows = SqlSchema.findAll({
      Request: AsGiven<{ readonly flowRunId: string; readonly limit: number }>(),
      Result: GraphArtifactRow,
      execute: ({ flowRunId, limit }) =>
        sql`
          SELECT artifact.id, artifact.created, artifact.key, artifact.type, artifact.task_run_id,
            EXISTS (SELECT 1 FROM artifact_collection c WHERE c.latest_id = artifact.id) AS is_latest,
            CASE WHEN artifact.type = 'progress' THEN artifact.data ELSE NULL END AS data
          FROM artifact WHERE artifact.flow_run_id = ${flowRunId} AND artifact.type <> 'result'
          ORDER BY artifact.created, artifact.id
          LIMIT ${limit}
        `
    })

    /**
     * A flow run's artifacts (its task runs' included; no results, and none without a type), with
     * whether each is its key's latest, for its graph. Progress artifacts bring their data.
     */
    const forGraph = (flowRunId: string, limit: number) => graphRows({ flowRunId, limit })

    return sqlErrorsAsDefects({ create, find, findLatest, update, remove, filter, count, filterLatest, countLatest, forGraph })
  })
}) {}
