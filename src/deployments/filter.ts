/**
 * DeploymentFilter: its wire schema and its fields as conditions on the `deployment` table. It lives
 * apart from the area's other schemas because every run query accepts it.
 */
import { Schema } from "effect"
import { criterion, Field, type FilterSpec, operatorField, strictStruct } from "../domain/filters.ts"
import { Id } from "../domain/ids.ts"
import * as Lax from "../domain/lax.ts"

const strings = criterion(Schema.Array(Schema.String))

export const DeploymentFilter = strictStruct(
  {
    operator: operatorField,
    id: criterion(strictStruct({ any_: criterion(Schema.Array(Id)), not_any_: criterion(Schema.Array(Id)) }, "DeploymentFilterId")),
    name: criterion(strictStruct({ any_: strings, like_: criterion(Schema.String) }, "DeploymentFilterName")),
    flow_or_deployment_name: criterion(strictStruct({ like_: criterion(Schema.String) }, "DeploymentOrFlowNameFilter")),
    paused: criterion(strictStruct({ eq_: criterion(Lax.Bool) }, "DeploymentFilterPaused")),
    tags: criterion(
      strictStruct(
        { operator: operatorField, all_: strings, any_: strings, is_null_: criterion(Lax.Bool) },
        "DeploymentFilterTags"
      )
    ),
    work_queue_name: criterion(strictStruct({ any_: strings }, "DeploymentFilterWorkQueueName")),
    concurrency_limit: criterion(
      strictStruct(
        { ge_: criterion(Lax.Int), le_: criterion(Lax.Int), is_null_: criterion(Lax.Bool) },
        "DeploymentFilterConcurrencyLimit"
      )
    )
  },
  "DeploymentFilter"
)
export type DeploymentFilter = typeof DeploymentFilter.Type

export const deploymentFilterSpec: FilterSpec = {
  id: Field.oneOf("deployment.id", "uuid"),
  name: Field.text("deployment.name"),
  // One search box for a deployment's name or its flow's.
  flow_or_deployment_name: (sql, c) =>
    c.like_
      ? [
        sql`(deployment.name ILIKE ${"%" + c.like_ + "%"} OR EXISTS (
          SELECT 1 FROM flow WHERE flow.id = deployment.flow_id AND flow.name ILIKE ${"%" + c.like_ + "%"}))`
      ]
      : [],
  paused: (sql, c) => (c.eq_ == null ? [] : [sql`deployment.paused = ${c.eq_}`]),
  tags: Field.tags("deployment.tags"),
  work_queue_name: Field.oneOf("deployment.work_queue_name", "text"),
  // Deprecated: limits moved to global concurrency limits, and the reference ignores this criterion.
  concurrency_limit: () => []
}
