/** Artifacts on the wire: records, create/update bodies, filters and sorts, as the reference has them. */
import { Schema } from "effect"
import { criterion, Criterion, Field, Filter } from "../domain/filters.ts"
import { Id } from "../domain/ids.ts"
import { LimitField, OffsetField } from "../domain/pagination.ts"
import { JsonValue, nullable, strictBody } from "../domain/schemas.ts"
import { Timestamp } from "../domain/time.ts"
import { DeploymentFilter } from "../deployments/filter.ts"
import { FlowRunFilter } from "../flow-runs/filter.ts"
import { FlowFilter } from "../flows/filter.ts"
import { TaskRunFilter } from "../task-runs/filter.ts"
import * as Lax from "../domain/lax.ts"

const MAX_METADATA_VALUE = 500

/** Lowercase letters, digits and dashes. */
const ArtifactKey = Schema.String.pipe(
  Schema.filter((key) => /^[a-z0-9-]*$/.test(key) || "Artifact key must only contain lowercase letters, numbers, and dashes.")
)

/** String values; one longer than 500 characters is cut there (with "..."), as the reference cuts it. */
const Metadata = Schema.transform(
  Schema.Record({ key: Schema.String, value: Schema.String }),
  Schema.Record({ key: Schema.String, value: Schema.String }),
  {
    strict: true,
    decode: (metadata) =>
      Object.fromEntries(
        Object.entries(metadata).map(([k, v]) => [k, v.length > MAX_METADATA_VALUE ? `${v.slice(0, MAX_METADATA_VALUE)}...` : v])
      ),
    encode: (metadata) => metadata
  }
)

const fields = {
  id: Id,
  created: Schema.NullOr(Timestamp),
  updated: Schema.NullOr(Timestamp),
  key: Schema.NullOr(Schema.String),
  type: Schema.NullOr(Schema.String),
  description: Schema.NullOr(Schema.String),
  data: Schema.NullOr(Schema.Unknown),
  metadata_: Schema.NullOr(Schema.Record({ key: Schema.String, value: Schema.String })),
  flow_run_id: Schema.NullOr(Id),
  task_run_id: Schema.NullOr(Id)
}

export const Artifact = Schema.Struct(fields).annotations({ identifier: "Artifact" })
export type Artifact = typeof Artifact.Type

export const ArtifactCollection = Schema.Struct({ ...fields, key: Schema.String, latest_id: Id }).annotations({
  identifier: "ArtifactCollection"
})
export type ArtifactCollection = typeof ArtifactCollection.Type

export const ArtifactCreate = strictBody(
  {
    key: nullable(ArtifactKey),
    type: nullable(Schema.String),
    description: nullable(Schema.String),
    data: nullable(JsonValue),
    metadata_: nullable(Metadata),
    flow_run_id: nullable(Id),
    task_run_id: nullable(Id)
  },
  "ArtifactCreate"
)
export type ArtifactCreate = typeof ArtifactCreate.Type

/** Only the given fields change. */
export const ArtifactUpdate = strictBody(
  {
    data: Schema.optional(Schema.NullOr(JsonValue)),
    description: Schema.optional(Schema.NullOr(Schema.String)),
    metadata_: Schema.optional(Schema.NullOr(Metadata))
  },
  "ArtifactUpdate"
)
export type ArtifactUpdate = typeof ArtifactUpdate.Type

/** The criteria artifacts and latest artifacts share, on either table. */
const artifactCriteria = (table: string) => ({
  key: Criterion.custom(
    "ArtifactFilterKey",
    { any_: criterion(Schema.Array(Schema.String)), like_: criterion(Schema.String), exists_: criterion(Lax.Bool) },
    (sql, c) => [
      ...Field.text(`${table}.key`)(sql, c),
      ...(c.exists_ === true ? [sql`${sql.unsafe(table)}.key IS NOT NULL`] : c.exists_ === false ? [sql`${sql.unsafe(table)}.key IS NULL`] : [])
    ]
  ),
  flow_run_id: Criterion.oneOf("ArtifactFilterFlowRunId", `${table}.flow_run_id`, "uuid", Id, ["any_"]),
  task_run_id: Criterion.oneOf("ArtifactFilterTaskRunId", `${table}.task_run_id`, "uuid", Id, ["any_"]),
  type: Criterion.oneOf("ArtifactFilterType", `${table}.type`, "text", Schema.String, ["any_", "not_any_"])
})

export const ArtifactFilter = Filter.make("ArtifactFilter", {
  ...artifactCriteria("artifact"),
  id: Criterion.oneOf("ArtifactFilterId", "artifact.id", "uuid", Id, ["any_"])
})

export const ArtifactCollectionFilter = Filter.make("ArtifactCollectionFilter", {
  ...artifactCriteria("artifact_collection"),
  latest_id: Criterion.oneOf("ArtifactCollectionFilterLatestId", "artifact_collection.latest_id", "uuid", Id, ["any_"])
})

export const ArtifactSort = Schema.Literal("CREATED_DESC", "UPDATED_DESC", "ID_DESC", "KEY_DESC", "KEY_ASC").annotations({
  identifier: "ArtifactSort"
})
export type ArtifactSort = typeof ArtifactSort.Type

const related = {
  flows: criterion(FlowFilter),
  flow_runs: criterion(FlowRunFilter),
  task_runs: criterion(TaskRunFilter),
  deployments: criterion(DeploymentFilter)
}

const page = {
  sort: Schema.optionalWith(ArtifactSort, { default: () => "ID_DESC" as const }),
  offset: OffsetField,
  limit: LimitField
}

export const ReadArtifactsBody = Schema.Struct({ ...related, artifacts: criterion(ArtifactFilter), ...page })
export const CountArtifactsBody = Schema.Struct({ ...related, artifacts: criterion(ArtifactFilter) })
export const ReadLatestArtifactsBody = Schema.Struct({ ...related, artifacts: criterion(ArtifactCollectionFilter), ...page })
export const CountLatestArtifactsBody = Schema.Struct({ ...related, artifacts: criterion(ArtifactCollectionFilter) })

/** An artifact as a flow run's graph lists it. */
export const GraphArtifact = Schema.Struct({
  id: Id,
  created: Timestamp,
  key: Schema.NullOr(Schema.String),
  type: Schema.NullOr(Schema.String),
  is_latest: Schema.Boolean,
  data: Schema.NullOr(Schema.Unknown)
}).annotations({ identifier: "GraphArtifact" })
