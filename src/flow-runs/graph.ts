/**
 * A flow run's graph, assembled from its task runs (and the subflow runs they started): the v1
 * dependency list and the v2 node graph the UI draws.
 */
import { Schema } from "effect"
import { Id } from "../domain/ids.ts"
import { State, StateType } from "../domain/states.ts"
import { Timestamp } from "../domain/time.ts"
import { GraphArtifact } from "../artifacts/schemas.ts"

/** A task run with the subflow run it started, if any, as the graph reads them. */
export interface GraphTaskRun {
  readonly id: string
  readonly name: string
  readonly task_inputs: Record<string, unknown>
  readonly state: State | null
  readonly state_type: StateType | null
  readonly expected_start_time: Date | null
  readonly start_time: Date | null
  readonly end_time: Date | null
  readonly total_run_time: number
  readonly estimated_run_time: number
  readonly subflow: {
    readonly id: string
    readonly label: string
    readonly state_type: StateType | null
    readonly expected_start_time: Date | null
    readonly start_time: Date | null
    readonly end_time: Date | null
  } | null
}

export const DependencyResult = Schema.Struct({
  id: Id,
  name: Schema.String,
  upstream_dependencies: Schema.Array(Schema.Unknown),
  state: Schema.NullOr(State),
  expected_start_time: Schema.NullOr(Timestamp),
  start_time: Schema.NullOr(Timestamp),
  end_time: Schema.NullOr(Timestamp),
  total_run_time: Schema.NullOr(Schema.Number),
  estimated_run_time: Schema.NullOr(Schema.Number),
  untrackable_result: Schema.Boolean
}).annotations({ identifier: "DependencyResult" })

const inputEntries = (inputs: Record<string, unknown>, only?: (key: string) => boolean) =>
  Object.entries(inputs)
    .filter(([key]) => only === undefined || only(key))
    .flatMap(([, value]) => (Array.isArray(value) ? value : []))
    .filter((entry): entry is Record<string, unknown> => typeof entry === "object" && entry !== null)

/** v1: one entry per task run, with every distinct input it names as an upstream dependency. */
export const dependencies = (tasks: ReadonlyArray<GraphTaskRun>) =>
  tasks.map((task) => {
    const seen = new Set<string>()
    const upstream = inputEntries(task.task_inputs).filter((entry) => {
      const key = JSON.stringify(entry)
      if (seen.has(key)) return false
      seen.add(key)
      return true
    })
    return {
      id: task.id,
      name: task.name,
      upstream_dependencies: upstream,
      state: task.state,
      expected_start_time: task.expected_start_time,
      start_time: task.start_time,
      end_time: task.end_time,
      total_run_time: task.total_run_time,
      estimated_run_time: task.estimated_run_time,
      untrackable_result: task.state?.state_details.untrackable_result ?? false
    }
  })

const Edge = Schema.Struct({ id: Id })

export const GraphNode = Schema.Struct({
  kind: Schema.Literal("task-run", "flow-run"),
  id: Id,
  label: Schema.String,
  state_type: Schema.NullOr(StateType),
  start_time: Timestamp,
  end_time: Schema.NullOr(Timestamp),
  parents: Schema.Array(Edge),
  children: Schema.Array(Edge),
  encapsulating: Schema.Array(Edge),
  artifacts: Schema.Array(GraphArtifact)
})

export const Graph = Schema.Struct({
  start_time: Schema.NullOr(Timestamp),
  end_time: Schema.NullOr(Timestamp),
  root_node_ids: Schema.Array(Id),
  nodes: Schema.Array(Schema.Tuple(Id, GraphNode)),
  artifacts: Schema.Array(GraphArtifact),
  states: Schema.Array(
    Schema.Struct({ id: Id, timestamp: Timestamp, type: StateType, name: Schema.NullOr(Schema.String) })
  )
}).annotations({ identifier: "Graph" })

type Node = typeof GraphNode.Type

/**
 * v2: a node per task run (the subflow run it started stands in for it), edges from the task runs
 * its inputs name (`__parents__` inputs enclose it instead), nodes that ended before `since` left out.
 */
export const nodeGraph = (
  tasks: ReadonlyArray<GraphTaskRun>,
  since: Date,
  artifactsOf: (taskRunId: string) => ReadonlyArray<typeof GraphArtifact.Type> = () => []
) => {
  const nodeIdOf = new Map(tasks.map((t) => [t.id, t.subflow?.id ?? t.id]))
  const nodes: Array<Node & { parents: Array<{ id: string }>; children: Array<{ id: string }> }> = []
  for (const task of tasks) {
    const sub = task.subflow
    const start = sub?.start_time ?? sub?.expected_start_time ?? task.start_time ?? task.expected_start_time
    if (start == null) continue
    const end = sub?.end_time ?? task.end_time ?? (task.state_type === "COMPLETED" ? task.expected_start_time : null)
    const idsIn = (entries: ReadonlyArray<Record<string, unknown>>) => [
      ...new Set(entries.map((e) => e.id).filter((id): id is string => typeof id === "string").map((id) => nodeIdOf.get(id) ?? id))
    ]
    nodes.push({
      kind: sub ? "flow-run" : "task-run",
      id: sub?.id ?? task.id,
      label: sub?.label ?? task.name,
      state_type: sub ? sub.state_type : task.state_type,
      start_time: start,
      end_time: end,
      parents: idsIn(inputEntries(task.task_inputs, (key) => key !== "__parents__")).map((id) => ({ id })),
      children: [],
      encapsulating: idsIn(inputEntries(task.task_inputs, (key) => key === "__parents__")).map((id) => ({ id })),
      artifacts: [...artifactsOf(task.id)]
    })
  }
  const byId = new Map(nodes.map((n) => [n.id, n]))
  for (const node of nodes) {
    node.parents = node.parents.filter((p) => byId.has(p.id))
    for (const parent of node.parents) byId.get(parent.id)!.children.push({ id: node.id })
  }
  const startOf = (id: string) => byId.get(id)?.start_time.getTime() ?? 0
  for (const node of nodes) {
    node.parents.sort((a, b) => startOf(a.id) - startOf(b.id))
    node.children.sort((a, b) => startOf(a.id) - startOf(b.id))
  }
  const kept = nodes
    .filter((n) => n.end_time === null || n.end_time >= since)
    .sort((a, b) => a.start_time.getTime() - b.start_time.getTime() || (a.end_time?.getTime() ?? Infinity) - (b.end_time?.getTime() ?? Infinity))
  return {
    nodes: kept.map((n) => [n.id, n] as const),
    root_node_ids: kept.filter((n) => n.parents.length === 0).map((n) => n.id)
  }
}
