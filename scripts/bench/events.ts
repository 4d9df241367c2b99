/**
 * Event ingestion: the events clients send, through `POST /events` (batches of 50) and through the
 * `/events/in` websocket Prefect clients use (one event per message), each for the same time with
 * the same number of clients. A few events of each second are probes, and a reader looks them up by
 * id until they are stored (what a filter, a trigger or another replica sees): their persistence
 * lag, and, with each client's last event a probe, the rate events were stored at (a websocket
 * client hands events over without waiting for the server, so how fast it sends says little).
 */
import WebSocket from "ws"
import { jsonClient, percentile, sleep } from "./load.ts"

export interface IngestionResult {
  /** Events stored per second: all of them, over the time from the first sent to the last stored. */
  readonly throughput: number
  /** Events the clients handed over per second (a websocket client does not wait for the server). */
  readonly sendRate: number
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
/**
 * Events the websocket clients keep in flight (sent, and not yet known stored through the probes):
 * a websocket client gets no answer per event, so without a window the clients would fill the
 * kernel's socket buffers with hundreds of thousands, spending the CPU the server shares with them.
 */
const WS_WINDOW = 20_000

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
  const waiting = new Map<string, { readonly at: number; readonly seq: number }>()
  const lags: Array<number> = []
  let lastStored = 0
  /** The highest sequence number of a probe found stored. */
  let storedUpTo = 0
  let running = true
  const loop = (async () => {
    while (running || waiting.size > 0) {
      // A page of /events/filter is at most 50 events.
      const ids = [...waiting.keys()].slice(0, 50)
      if (ids.length > 0) {
        const res = await api.send("POST", "/events/filter", {
          filter: { id: { id: ids }, occurred: { since: new Date(Date.now() - 3_600_000).toISOString() } },
          limit: 50
        })
        if (res.status !== 200) throw new Error(`POST /events/filter: ${res.status} ${JSON.stringify(res.body)}`)
        const found = new Set<string>(res.body.events.map((e: { id: string }) => e.id))
        const at = performance.now()
        for (const id of found) {
          const probe = waiting.get(id)!
          lastStored = at
          storedUpTo = Math.max(storedUpTo, probe.seq)
          lags.push(at - probe.at)
          waiting.delete(id)
        }
      }
      await sleep(50)
    }
  })()
  return {
    probe: (id: string, seq = 0) => void waiting.set(id, { at: performance.now(), seq }),
    storedUpTo: () => storedUpTo,
    /** Stops once every probe is found, or after `waitAfterMs`; the probes left are lost. */
    finish: async (waitAfterMs: number) => {
      running = false
      const deadline = Date.now() + waitAfterMs
      while (waiting.size > 0 && Date.now() < deadline) await sleep(50)
      const lost = waiting.size
      waiting.clear()
      await loop
      return { lagP50: percentile(lags, 50), lagP99: percentile(lags, 99), lost, lastStored }
    }
  }
}

/**
 * How long a client waits before its next chunk of BATCH events: none when saturating, else what
 * keeps all CLIENTS together at `rate` events a second.
 */
const pauseMs = (rate: number | undefined) => (rate === undefined ? 0 : (CLIENTS * BATCH * 1000) / rate)

/**
 * POST /events, BATCH events per request, CLIENTS clients: in a closed loop, or at `rate` events a
 * second in all (the persistence lag below saturation).
 */
export const ingestByPost = async (apiUrl: string, seconds: number, rate?: number): Promise<IngestionResult> => {
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
        // The last event a client sends is a probe too: when it is stored, all are.
        if (performance.now() >= deadline) reader.probe(body[body.length - 1]!.id)
        else if (rate !== undefined) await sleep(pauseMs(rate))
      }
    })
  )
  return result(sent, started, performance.now(), await reader.finish(30_000))
}

/** The result, from what was sent and when the last probe was found stored. */
const result = (
  sent: number,
  started: number,
  sentBy: number,
  read: { readonly lagP50: number; readonly lagP99: number; readonly lost: number; readonly lastStored: number }
): IngestionResult => ({
  // Events lost or never found: no stored rate to claim.
  throughput: read.lost > 0 ? 0 : sent / ((Math.max(read.lastStored, sentBy) - started) / 1000),
  sendRate: sent / ((sentBy - started) / 1000),
  lagP50: read.lagP50,
  lagP99: read.lagP99,
  events: sent,
  lost: read.lost
})

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

/** /events/in, one event per message, CLIENTS sockets sending as fast as they drain, or at `rate` events a second in all. */
export const ingestByWebsocket = async (apiUrl: string, seconds: number, rate?: number): Promise<IngestionResult> => {
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
          const seq = sent++
          if ((seq % PROBE_EVERY) === 0 || (i === BATCH - 1 && performance.now() >= deadline)) reader.probe(event.id, seq)
        }
        while (sent - reader.storedUpTo() > WS_WINDOW && performance.now() < deadline) await sleep(5)
        while (socket.bufferedAmount > WS_HIGH_WATER) await sleep(1)
        if (socket.readyState !== WebSocket.OPEN) throw new Error("/events/in closed the socket")
        if (rate !== undefined) await sleep(pauseMs(rate))
        else await new Promise<void>((resolve) => setImmediate(resolve))
      }
    })
  )
  // What the clients wrote is the server's once their buffers are empty.
  while (sockets.some((socket) => socket.bufferedAmount > 0)) await sleep(1)
  const sentBy = performance.now()
  const read = await reader.finish(180_000)
  for (const socket of sockets) socket.close()
  return result(sent, started, sentBy, read)
}
