/**
 * DeploymentFilter: its criteria, each its wire schema and its condition on the `deployment` table.
 * It lives apart from the area's other schemas because every run query accepts it.
 */
import { Schema } from "effect"
import { criterion, Criterion, Filter } from "../domain/filters.ts"
import { Id } from "../domain/ids.ts"
import * as Lax from "../domain/lax.ts"

export const DeploymentFilter = Filter.make("DeploymentFilter", {
  id: Criterion.oneOf("DeploymentFilterId", "deployment.id", "uuid", Id, ["any_", "not_any_"]),
  name: Criterion.text("DeploymentFilterName", "deployment.name", ["any_", "like_"]),
  // One search box for a deployment's name or its flow's.
  flow_or_deployment_name: Criterion.custom("DeploymentOrFlowNameFilter", { like_: criterion(Schema.String) }, (sql, c) =>
    c.like_
      ? [
        sql`(deployment.name ILIKE ${"%" + c.like_ + "%"} OR EXISTS (
          SELECT 1 FROM flow WHERE flow.id = deployment.flow_id AND flow.name ILIKE ${"%" + c.like_ + "%"}))`
      ]
      : []),
  paused: Criterion.custom("DeploymentFilterPaused", { eq_: criterion(Lax.Bool) }, (sql, c) =>
    c.eq_ == null ? [] : [sql`deployment.paused = ${c.eq_}`]),
  tags: Criterion.tags("DeploymentFilterTags", "deployment.tags", ["operator", "all_", "any_", "is_null_"]),
  work_queue_name: Criterion.oneOf("DeploymentFilterWorkQueueName", "deployment.work_queue_name", "text", Schema.String, ["any_"]),
  // Deprecated: limits moved to global concurrency limits, and the reference ignores this criterion.
  concurrency_limit: Criterion.custom(
    "DeploymentFilterConcurrencyLimit",
    { ge_: criterion(Lax.Int), le_: criterion(Lax.Int), is_null_: criterion(Lax.Bool) },
    () => []
  )
})
export type DeploymentFilter = typeof DeploymentFilter.Type
