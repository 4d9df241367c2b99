/**
 * The one place run states change. A proposal goes through the run's policy (the core one, the
 * minimal one when forced, or the rules a background service brings), the concurrency rules that
 * take or give back slots, and what a stored state leaves behind (a task's cached result), all in
 * the transaction the state store (RunStatesRepo) holds with the run's row locked.
 */
import { Effect, Option, Random, Schema } from "effect"
import {
  ConcurrencyRules,
  deploymentConcurrencyColumn,
  type DeploymentConcurrency,
  deploymentStillWithoutLimit,
  flowHoldsNoSlots
} from "../concurrency/rules.ts"
import type { StateCreate } from "../domain/states.ts"
import { Settings } from "../settings/settings.ts"
import { decodePolicy as decodeFlowRunPolicy } from "../flow-runs/wire.ts"
import { TaskRunPolicy } from "../task-runs/schemas.ts"
import type { Rule, RuleRun } from "./engine.ts"
import { coreFlowPolicy, minimalFlowPolicy } from "./flow-policy.ts"
import { RunStatesRepo, type RunStateRow } from "./repo.ts"
import { TaskRunFactsRepo } from "./task-facts-repo.ts"
import { coreTaskPolicy, minimalTaskPolicy, type TaskRuleRun } from "./task-policy.ts"

/** A flow run's row as its transition reads it: the state columns, the rule facts, its deployment's limit. */
interface FlowRunTransitionRow extends RunStateRow {
  readonly deployment_id: string | null
  readonly infrastructure_pid: string | null
  readonly parent_task_run_id: string | null
  readonly work_queue_id: string | null
  readonly deployment_concurrency: DeploymentConcurrency | null
}

interface TaskRunTransitionRow extends RunStateRow {
  readonly flow_run_id: string | null
  readonly flow_run_run_count: number
  readonly tags: ReadonlyArray<string>
}

const decodeTaskPolicy = Schema.decodeUnknownSync(TaskRunPolicy)

export class Orchestrator extends Effect.Service<Orchestrator>()("baton/Orchestrator", {
  effect: Effect.gen(function* () {
    const states = yield* RunStatesRepo
    const concurrency = yield* ConcurrencyRules
    const facts = yield* TaskRunFactsRepo
    const settings = yield* Settings

    /**
     * Proposes a state to a flow run: through the core policy, the minimal one when `force`, or
     * `rules` (a background service's). None when there is no such run.
     */
    const setFlowRunState = (
      id: string,
      proposed: StateCreate,
      options: { readonly force?: boolean; readonly rules?: ReadonlyArray<Rule<RuleRun>> } = {}
    ) =>
      states.transition<FlowRunTransitionRow, RuleRun>({
        kind: "flow_run",
        id,
        proposed,
        rules: options.rules ?? (options.force ? minimalFlowPolicy : coreFlowPolicy),
        columns: deploymentConcurrencyColumn,
        // Only the core policy takes deployment slots; every stored transition may give one back.
        ...(options.rules === undefined && !options.force
          ? { secure: (row, _run, outcome, initial) => concurrency.secureFlow(row, outcome, initial) }
          : {}),
        afterStore: (row, state, initial) => concurrency.releaseFlow(row, state, initial),
        lockFree: flowHoldsNoSlots,
        lockFreeGuard: deploymentStillWithoutLimit,
        ruleRun: (row) => Effect.succeed({ ...row, empirical_policy: decodeFlowRunPolicy(row.empirical_policy ?? {}) })
      }).pipe(Effect.map(Option.fromNullable))

    /** The facts the task rules read, looked up inside the transition's transaction. */
    const taskRuleRun = (row: TaskRunTransitionRow, proposed: { readonly state_details: { readonly cache_key: string | null } }) =>
      Effect.gen(function* () {
        return {
          run_count: row.run_count,
          flow_run_run_count: row.flow_run_run_count,
          empirical_policy: decodeTaskPolicy(row.empirical_policy ?? {}),
          flow_run: yield* facts.flowRun(row.flow_run_id),
          cached: yield* facts.cachedState(proposed.state_details.cache_key),
          max_cache_key_length: settings.server.tasks.max_cache_key_length,
          jitter: yield* Random.next
        } satisfies TaskRuleRun
      })

    /**
     * Proposes a state to a task run: the core policy, the minimal one when `force`, or `rules` (a
     * background service's, taking no slots). None when there is no such run.
     */
    const setTaskRunState = (id: string, proposed: StateCreate, force: boolean, rules?: ReadonlyArray<Rule<TaskRuleRun>>) =>
      states.transition<TaskRunTransitionRow, TaskRuleRun>({
        kind: "task_run",
        id,
        proposed,
        rules: rules ?? (force ? minimalTaskPolicy : coreTaskPolicy),
        ruleRun: taskRuleRun,
        // Only the core policy takes tag slots; every stored transition may give them back.
        ...(force || rules !== undefined ? {} : { secure: (row, _run, outcome) => concurrency.secureTask(row, outcome) }),
        afterStore: (row, state) => Effect.zipRight(facts.afterStore(row, state), concurrency.releaseTask(row, state))
      }).pipe(Effect.map(Option.fromNullable))

    return { setFlowRunState, setTaskRunState } as const
  }),
  dependencies: [RunStatesRepo.Default, ConcurrencyRules.Default, TaskRunFactsRepo.Default]
}) {}
