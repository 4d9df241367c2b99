import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { BatonApi } from "../api.ts"

/**
 * Task workers are the clients subscribed to scheduled task runs over the task-run websocket; until
 * Baton serves that websocket no task worker can be connected, so the list is empty.
 */
export const TaskWorkersLive = HttpApiBuilder.group(BatonApi, "taskWorkers", (handlers) =>
  Effect.succeed(handlers.handle("filter", () => Effect.succeed([])))
)
