/**
 * GET /task_runs/subscriptions/scheduled (websocket): a task worker authenticates as on every
 * socket, subscribes with `{"type": "subscribe", "keys": [task keys], "client_id": …}`, and then
 * receives each background task run of its keys as the TaskRun JSON, one at a time: it answers
 * `{"type": "ack"}` before it gets the next, or `{"type": "quit"}` to close. A protocol violation
 * closes the socket with 4001 and the reference's reason (task-workers/deliveries.ts says how runs
 * are queued and claimed).
 */
import { HttpApiBuilder } from "@effect/platform"
import { Duration, Effect, Layer, Option, Schema } from "effect"
import { now } from "../domain/time.ts"
import { servePrefectSocket } from "../http/websocket.ts"
import { Metrics } from "../http/metrics-registry.ts"
import { Settings } from "../settings/settings.ts"
import { TaskRunsRepo } from "../task-runs/repo.ts"
import { TaskRun } from "../task-runs/schemas.ts"
import { TaskRunDeliveries, WORKER_REFRESH } from "./deliveries.ts"

const PROTOCOL_VIOLATION = 4001
const NORMAL_CLOSURE = 1000
const encodeTaskRun = Schema.encodeSync(TaskRun)

const textsOf = (value: unknown): Array<string> =>
  Array.isArray(value) ? value.filter((key): key is string => typeof key === "string" && key !== "") : []

export const TaskRunSubscriptionsLive = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function* () {
    const settings = yield* Settings
    const metrics = yield* Metrics
    const deliveries = yield* TaskRunDeliveries
    const taskRuns = yield* TaskRunsRepo

    yield* router.get(
      "/task_runs/subscriptions/scheduled",
      servePrefectSocket(settings, metrics, (socket) =>
        Effect.gen(function* () {
          const first = yield* socket.next
          if (Option.isNone(first)) return
          const message = first.value as { type?: unknown; keys?: unknown; client_id?: unknown } | undefined
          if (message?.type !== "subscribe") return yield* socket.close(PROTOCOL_VIOLATION, "Protocol violation: expected 'subscribe' message")
          const keys = textsOf(message.keys)
          if (keys.length === 0) return yield* socket.close(PROTOCOL_VIOLATION, "Protocol violation: expected 'keys' in subscribe message")
          const clientId = typeof message.client_id === "string" && message.client_id !== "" ? message.client_id : undefined
          if (clientId === undefined) {
            return yield* socket.close(PROTOCOL_VIOLATION, "Protocol violation: expected 'client_id' in subscribe message")
          }
          yield* Effect.logInfo(`Task worker '${clientId}' subscribed to task keys ${JSON.stringify(keys)}`)

          const wake = yield* deliveries.watch
          // Listed as a task worker while connected, refreshed every WORKER_REFRESH, forgotten on close.
          yield* Effect.acquireRelease(deliveries.observe(clientId, keys), () => deliveries.forget(clientId).pipe(Effect.ignore))
          let observed = (yield* now).getTime()
          const refresh = Effect.gen(function* () {
            const at = (yield* now).getTime()
            if (at - observed < Duration.toMillis(WORKER_REFRESH)) return
            observed = at
            yield* deliveries.observe(clientId, keys)
          })

          while (true) {
            yield* refresh
            const claimed = yield* deliveries.claim(keys)
            if (claimed === undefined) {
              const gone = yield* Effect.raceFirst(Effect.as(wake, false), Effect.as(socket.closed, true))
              if (gone) return
              continue
            }
            const found = yield* taskRuns.find(claimed)
            if (Option.isNone(found)) {
              yield* deliveries.drop(claimed)
              continue
            }
            const run = found.value
            // Until acknowledged, the run is the socket's: anything else gives it back (to the retry queue).
            const acknowledged = yield* Effect.gen(function* () {
              yield* socket.send(encodeTaskRun(run))
              const answer = yield* socket.next
              if (Option.isNone(answer)) return "gone" as const
              const type = (answer.value as { type?: unknown } | undefined)?.type
              return type === "ack" ? "ack" as const : type === "quit" ? "quit" as const : "violation" as const
            }).pipe(Effect.onExit((exit) => (exit._tag === "Success" && exit.value === "ack" ? Effect.void : deliveries.giveBack(claimed))))
            if (acknowledged === "ack") {
              yield* deliveries.delivered(claimed)
              continue
            }
            if (acknowledged === "quit") return yield* socket.close(NORMAL_CLOSURE, "")
            if (acknowledged === "violation") return yield* socket.close(PROTOCOL_VIOLATION, "Protocol violation: expected 'ack' message")
            return
          }
        }).pipe(
          Effect.scoped,
          // A database that fails mid-session ends the session; the worker connects again.
          Effect.catchAllCause((cause) => Effect.logWarning("A task worker's subscription ended", cause))
        )
      )
    )
  })
).pipe(Layer.provide([TaskRunDeliveries.Default, TaskRunsRepo.Default, Metrics.Default]))
