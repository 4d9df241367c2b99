/**
 * Background task delivery: task workers on the task-run websocket (the protocol only, as the
 * reference's task worker speaks it) receive and acknowledge background task runs created through
 * the API; the time from each creation to its delivery, and whether every run came exactly once.
 */
import WebSocket from "ws"
import { jsonClient, percentile } from "./load.ts"

export interface DeliveryResult {
  readonly runs: number
  readonly delivered: number
  readonly duplicates: number
  readonly p50: number
  readonly p99: number
  readonly throughput: number
}

/** A task worker on `api` for `key`: acknowledges every run it gets, telling `onRun`. */
const taskWorker = (api: string, key: string, clientId: string, onRun: (id: string) => void) =>
  new Promise<WebSocket>((resolve, reject) => {
    const socket = new WebSocket(`${api.replace(/^http/, "ws")}/task_runs/subscriptions/scheduled`, ["prefect"])
    socket.on("error", reject)
    socket.on("open", () => socket.send(JSON.stringify({ type: "auth", token: null })))
    socket.on("message", (data) => {
      const message = JSON.parse(data.toString())
      if (message.type === "auth_success") {
        socket.send(JSON.stringify({ type: "subscribe", keys: [key], client_id: clientId }))
        resolve(socket)
        return
      }
      onRun(message.id)
      socket.send(JSON.stringify({ type: "ack" }))
    })
  })

/** `runs` background task runs created through `apis[0]` (20 at a time), delivered to one worker per API. */
export const backgroundTaskDelivery = async (apis: ReadonlyArray<string>, runs: number): Promise<DeliveryResult> => {
  const key = `bench.task.${Date.now()}`
  const created = new Map<string, number>()
  const delivered = new Map<string, number>()
  const seen = new Map<string, number>()
  let done: () => void = () => undefined
  const all = new Promise<void>((resolve) => (done = resolve))
  const onRun = (id: string) => {
    seen.set(id, (seen.get(id) ?? 0) + 1)
    if (!delivered.has(id)) delivered.set(id, performance.now())
    if (seen.size === runs) done()
  }
  const workers = await Promise.all(apis.map((api, i) => taskWorker(api, key, `bench-worker-${i}`, onRun)))
  await new Promise((resolve) => setTimeout(resolve, 300))
  const api = jsonClient(apis[0]!)
  const started = performance.now()
  for (let i = 0; i < runs; i += 20) {
    await Promise.all(Array.from({ length: Math.min(20, runs - i) }, async (_, j) => {
      const sent = performance.now()
      const res = await api.post("/task_runs/", {
        task_key: key,
        dynamic_key: String(i + j),
        state: { type: "SCHEDULED", state_details: { deferred: true } }
      })
      // Measured from the request: a run may be delivered before its creation is answered.
      created.set(res.id, sent)
    }))
  }
  await Promise.race([all, new Promise((resolve) => setTimeout(resolve, 60_000))])
  const seconds = (performance.now() - started) / 1000
  for (const worker of workers) worker.close()
  const latencies = [...created].flatMap(([id, sent]) => (delivered.has(id) ? [delivered.get(id)! - sent] : []))
  return {
    runs,
    delivered: seen.size,
    duplicates: [...seen.values()].filter((count) => count > 1).length,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    throughput: seen.size / seconds
  }
}
