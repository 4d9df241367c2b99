/** The pause and resume actions of work queues, work pools and automations. */
import { Effect, Option } from "effect"
import { WorkPools } from "../work-pools/pools.ts"
import { WorkQueuesRepo } from "../work-pools/queues-repo.ts"
import { WorkPoolsRepo } from "../work-pools/repo.ts"
import { command, type Perform, type Performers, statusReason, target, targetResource } from "./action-performer.ts"
import { actionFailed } from "./outbound.ts"
import { Automations } from "./service.ts"

type ToggleActionType =
  | "pause-work-queue"
  | "resume-work-queue"
  | "pause-work-pool"
  | "resume-work-pool"
  | "pause-automation"
  | "resume-automation"

export const makeToggleActions = Effect.gen(function* () {
  const pools = yield* WorkPools
  const poolsRepo = yield* WorkPoolsRepo
  const queues = yield* WorkQueuesRepo
  const automations = yield* Automations

  const workQueue: Perform<"pause-work-queue" | "resume-work-queue"> = (ta, action, related, details) =>
    Effect.gen(function* () {
      const id = yield* target(ta, action, action.work_queue_id, "prefect.work-queue", "work queue")
      related.push(targetResource("work-queue", id))
      const lookup = yield* queues.find(id)
      if (Option.isNone(lookup)) {
        details.status_code = 404
        return yield* actionFailed(statusReason(action.type, 404))
      }
      const found = lookup.value
      yield* command(action.type, pools.updateQueue(found, { is_paused: action.type === "pause-work-queue" }, { rebalance: false }), details, 204)
    })

  const workPool: Perform<"pause-work-pool" | "resume-work-pool"> = (ta, action, related, details) =>
    Effect.gen(function* () {
      const id = yield* target(ta, action, action.work_pool_id, "prefect.work-pool", "work pool")
      const lookup = yield* poolsRepo.findById(id)
      if (Option.isNone(lookup)) return yield* actionFailed(`Work pool ${id} not found`)
      const pool = lookup.value
      related.push(targetResource("work-pool", id, pool.name))
      yield* command(action.type, pools.update(pool.name, { is_paused: action.type === "pause-work-pool" }), details, 204)
    })

  const automation: Perform<"pause-automation" | "resume-automation"> = (ta, action, related, details) =>
    Effect.gen(function* () {
      const id = yield* target(ta, action, action.automation_id, "prefect.automation", "automation")
      related.push(targetResource("automation", id))
      yield* command(action.type, automations.setEnabled(id, action.type === "resume-automation"), details, 204)
    })

  return {
    "pause-work-queue": workQueue,
    "resume-work-queue": workQueue,
    "pause-work-pool": workPool,
    "resume-work-pool": workPool,
    "pause-automation": automation,
    "resume-automation": automation
  } satisfies Performers<ToggleActionType>
})
