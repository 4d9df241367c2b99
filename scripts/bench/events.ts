/**
 * Event ingestion: the events clients send, through `POST /events` (batches of 50) and through the
 * `/events/in` websocket Prefect clients use (one event per message), each for the same time with
 * the same number of clients. Besides the rate the server takes events at, each row measures the
 * persistence lag: a few events of each second are probes, and a reader looks them up by id until
 * they are stored (what a filter, a trigger or another replica sees).
 */
import WebSocket from "ws"
import { jsonClient, percentile, sleep } from "./load.ts"

export interface IngestionResult {
  /** Events the server took per second. */
  readonly throughput: number
  /** Persistence lag of the probes, ms. */
  readonly lagP50: number
  readonly lagP99: number
  readonly events: number
  /** Probes never found stored within the wait after the run. */
  readonly lost: number
}

const CLIENTS = 10
const BATCH = 50
/** One event in this many is a probe. */
const PROBE_EVERY = 200
/** Bytes a websocket client lets wait in its send buffer before it waits for the socket to drain. */
const WS_HIGH_WATER = 256 * 1024

const makeEvent = (name: string, i: number) => ({
  id: crypto.randomUUID(),
  occurred: new Date().toISOString(),
  event: name,
  resource: { "prefect.resource.id": `bench.resource.${i % 7}` },
  payload: { i }
})

/** Looks the probes up by id until each is stored (or `waitAfterMs` after the run ends). */
const probeReader = (apiUrl: string) => {
  const api = jsonClient(apiUrl)
  const waiting = new Map<string, number>()
  const lags: Array<number> = []
  let running = true
  const loop = (async () => {
    while (running || waiting.size > 0) {
      const ids = [...waiting.keys()].slice(0, 200)
      if (ids.length > 0) {
        const res = await api.send("POST", "/events/filter", {
          filter: { id: { id: ids }, occurred: { since: new Date(Date.now() - 3_600_000).toISOString() } },
          limit: 200
        })
        const found = new Set<string>(res.status === 200 ? res.body.events.map((e: { id: string }) => e.id) : [])
        const at = performance.now()
        for (const id of found) {
          lags.push(at - waiting.get(id)!)
          waiting.delete(id)
        }
      }
      await sleep(50)
    }
  })()
  return {
    probe: (id: string) => void waiting.set(id, performance.now()),
    /** Stops once every probe is found, or after `waitAfterMs`; the probes left are lost. */
    finish: async (waitAfterMs: number) => {
      running = false
      const deadline = Date.now() + waitAfterMs
      while (waiting.size > 0 && Date.now() < deadline) await sleep(50)
      const lost = waiting.size
      waiting.clear()
      await loop
      return { lagP50: percentile(lags, 50), lagP99: percentile(lags, 99), lost }
    }
  }
}

/** POST /events, BATCH events per request, CLIENTS clients in a closed loop. */
export const ingestByPost = async (apiUrl: string, seconds: number): Promise<IngestionResult> => {
  const api = jsonClient(apiUrl)
  const reader = probeReader(apiUrl)
  let sent = 0
  const started = performance.now()
  const deadline = started + seconds * 1000
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      while (performance.now() < deadline) {
        const body = Array.from({ length: BATCH }, (_, i) => makeEvent("bench.post.happened", sent + i))
        const res = await api.send("POST", "/events", body)
        if (res.status !== 204) throw new Error(`POST /events: ${res.status}`)
        for (const event of body) if ((sent++ % PROBE_EVERY) === 0) reader.probe(event.id)
      }
    })
  )
  const elapsed = (performance.now() - started) / 1000
  return { throughput: sent / elapsed, events: sent, ...(await reader.finish(30_000)) }
}

const openSocket = (apiUrl: string) =>
  new Promise<WebSocket>((resolve, reject) => {
    const socket = new WebSocket(`${apiUrl.replace(/^http/, "ws")}/events/in`, ["prefect"])
    socket.once("error", reject)
    socket.once("open", () => socket.send(JSON.stringify({ type: "auth", token: null })))
    socket.once("message", (data) => {
      const answer = JSON.parse(data.toString())
      if (answer.type === "auth_success") resolve(socket)
      else reject(new Error(`/events/in: ${data.toString()}`))
    })
  })

/** /events/in, one event per message, CLIENTS sockets sending as fast as they drain. */
export const ingestByWebsocket = async (apiUrl: string, seconds: number): Promise<IngestionResult> => {
  const reader = probeReader(apiUrl)
  const sockets = await Promise.all(Array.from({ length: CLIENTS }, () => openSocket(apiUrl)))
  let sent = 0
  const started = performance.now()
  const deadline = started + seconds * 1000
  await Promise.all(
    sockets.map(async (socket) => {
      while (performance.now() < deadline) {
        // Sent in bursts between looks at the clock; the buffer bounds what waits on this side.
        for (let i = 0; i < BATCH; i++) {
          const event = makeEvent("bench.ws.happened", sent)
          socket.send(JSON.stringify(event))
          if ((sent++ % PROBE_EVERY) === 0) reader.probe(event.id)
        }
        while (socket.bufferedAmount > WS_HIGH_WATER) await sleep(1)
        if (socket.readyState !== WebSocket.OPEN) throw new Error("/events/in closed the socket")
        await new Promise<void>((resolve) => setImmediate(resolve))
      }
    })
  )
  // What the clients wrote is the server's once their buffers are empty.
  while (sockets.some((socket) => socket.bufferedAmount > 0)) await sleep(1)
  const elapsed = (performance.now() - started) / 1000
  for (const socket of sockets) socket.close()
  return { throughput: sent / elapsed, events: sent, ...(await reader.finish(30_000)) }
}
