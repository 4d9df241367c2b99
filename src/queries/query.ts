/**
 * The one cross-area query compiler. A query body carries filters on several kinds of object (`flows`,
 * `flow_runs`, `task_runs`, `deployments`, `work_pools`, `work_pool_queues`); the rows of the target
 * table match when their own filter matches and, for each other filter given, a related row matches
 * it (an EXISTS over the join path between the two tables). As in the reference, a filter given as
 * `{}` still asks for a related row to exist.
 */
import type { Statement } from "@effect/sql"
import type { SqlClient } from "@effect/sql/SqlClient"
import { DeploymentFilter } from "../deployments/filter.ts"
import { FlowRunFilter } from "../flow-runs/filter.ts"
import { FlowFilter } from "../flows/filter.ts"
import { TaskRunFilter } from "../task-runs/filter.ts"
import { WorkPoolFilter, WorkQueueFilter } from "../work-pools/filter.ts"

/** The filters a query body may carry on each kind of object, as their schemas decoded them. */
export interface RelatedFilters {
  readonly flows?: FlowFilter | null | undefined
  readonly flow_runs?: FlowRunFilter | null | undefined
  readonly task_runs?: TaskRunFilter | null | undefined
  readonly deployments?: DeploymentFilter | null | undefined
  readonly work_pools?: WorkPoolFilter | null | undefined
  readonly work_pool_queues?: WorkQueueFilter | null | undefined
  readonly work_queues?: WorkQueueFilter | null | undefined
}

export type Entity =
  | "flow"
  | "flow_run"
  | "task_run"
  | "deployment"
  | "work_pool"
  | "work_queue"
  | "artifact"
  | "artifact_collection"

type Fragment = Statement.Fragment

/** Each filter of a body as a condition on its own table, with the entity it filters. */
const conditionsOf = (sql: SqlClient, body: RelatedFilters) =>
  [
    ["flow", body.flows && FlowFilter.compile(sql, body.flows)],
    ["flow_run", body.flow_runs && FlowRunFilter.compile(sql, body.flow_runs)],
    ["task_run", body.task_runs && TaskRunFilter.compile(sql, body.task_runs)],
    ["deployment", body.deployments && DeploymentFilter.compile(sql, body.deployments)],
    ["work_pool", body.work_pools && WorkPoolFilter.compile(sql, body.work_pools)],
    ["work_queue", body.work_pool_queues && WorkQueueFilter.compile(sql, body.work_pool_queues)],
    ["work_queue", body.work_queues && WorkQueueFilter.compile(sql, body.work_queues)]
  ] as const

const queueOf = (column: string) => `work_queue WHERE work_queue.id = ${column}`
const poolOf = (column: string) =>
  `work_queue JOIN work_pool ON work_pool.id = work_queue.work_pool_id WHERE work_queue.id = ${column}`

/** From an artifact's run ids to its flow run, flow, deployment and task run. */
function runOfArtifact(table: string): Partial<Record<Entity, string>> {
  return {
    flow_run: `flow_run WHERE flow_run.id = ${table}.flow_run_id`,
    flow: `flow_run JOIN flow ON flow.id = flow_run.flow_id WHERE flow_run.id = ${table}.flow_run_id`,
    deployment: `flow_run JOIN deployment ON deployment.id = flow_run.deployment_id WHERE flow_run.id = ${table}.flow_run_id`,
    task_run: `task_run WHERE task_run.id = ${table}.task_run_id`
  }
}

/** From a row of the target (outer) table: the FROM … WHERE that reaches the related rows. */
const paths: Record<Entity, Partial<Record<Entity, string>>> = {
  flow: {
    flow_run: "flow_run WHERE flow_run.flow_id = flow.id",
    task_run: "task_run JOIN flow_run ON flow_run.id = task_run.flow_run_id WHERE flow_run.flow_id = flow.id",
    deployment: "deployment WHERE deployment.flow_id = flow.id",
    work_pool:
      "deployment JOIN work_queue ON work_queue.id = deployment.work_queue_id JOIN work_pool ON work_pool.id = work_queue.work_pool_id WHERE deployment.flow_id = flow.id",
    work_queue: "deployment JOIN work_queue ON work_queue.id = deployment.work_queue_id WHERE deployment.flow_id = flow.id"
  },
  flow_run: {
    flow: "flow WHERE flow.id = flow_run.flow_id",
    task_run: "task_run WHERE task_run.flow_run_id = flow_run.id",
    deployment: "deployment WHERE deployment.id = flow_run.deployment_id",
    work_pool: poolOf("flow_run.work_queue_id"),
    work_queue: queueOf("flow_run.work_queue_id")
  },
  task_run: {
    flow: "flow_run JOIN flow ON flow.id = flow_run.flow_id WHERE flow_run.id = task_run.flow_run_id",
    flow_run: "flow_run WHERE flow_run.id = task_run.flow_run_id",
    deployment: "flow_run JOIN deployment ON deployment.id = flow_run.deployment_id WHERE flow_run.id = task_run.flow_run_id",
    work_pool:
      "flow_run JOIN work_queue ON work_queue.id = flow_run.work_queue_id JOIN work_pool ON work_pool.id = work_queue.work_pool_id WHERE flow_run.id = task_run.flow_run_id",
    work_queue: "flow_run JOIN work_queue ON work_queue.id = flow_run.work_queue_id WHERE flow_run.id = task_run.flow_run_id"
  },
  deployment: {
    flow: "flow WHERE flow.id = deployment.flow_id",
    flow_run: "flow_run WHERE flow_run.deployment_id = deployment.id",
    task_run: "task_run JOIN flow_run ON flow_run.id = task_run.flow_run_id WHERE flow_run.deployment_id = deployment.id",
    work_pool: poolOf("deployment.work_queue_id"),
    work_queue: queueOf("deployment.work_queue_id")
  },
  work_pool: {},
  artifact: runOfArtifact("artifact"),
  artifact_collection: runOfArtifact("artifact_collection"),
  work_queue: {
    work_pool: "work_pool WHERE work_pool.id = work_queue.work_pool_id"
  }
}

/**
 * The condition a query body puts on rows of `target`. Filters the target cannot reach (and keys that
 * are not filters, such as sort or limit) are ignored; the body schema decides which are accepted.
 */
export const queryCondition = (sql: SqlClient, target: Entity, body: RelatedFilters): Fragment => {
  const conditions: Array<Fragment> = []
  for (const [entity, condition] of conditionsOf(sql, body)) {
    if (!condition) continue
    if (entity === target) {
      conditions.push(condition)
      continue
    }
    const path = paths[target][entity]
    if (path !== undefined) conditions.push(sql`EXISTS (SELECT 1 FROM ${sql.unsafe(path)} AND ${condition})`)
  }
  return conditions.length === 0 ? sql`TRUE` : sql.and(conditions)
}
