/**
 * Load generation for the bench: autocannon for single routes, and a closed-loop driver (each
 * simulated client sends its next request when the previous one answered) for multi-step scenarios.
 */
import autocannon from "autocannon"
import * as http from "node:http"

export interface LoadResult {
  /** Completed requests (or operations) per second. */
  readonly throughput: number
  readonly p50: number
  readonly p99: number
  readonly count: number
  readonly errors: number
  /** Each operation's latency in ms (closed loops only), so that rounds can be joined. */
  readonly latencies?: ReadonlyArray<number>
  /** Seconds the load ran (closed loops only). */
  readonly seconds?: number
}

export interface CannonOptions {
  readonly url: string
  readonly method?: "GET" | "POST"
  readonly body?: unknown
  readonly connections: number
  readonly seconds: number
  /** Requests per second over all connections; unlimited (closed loop) unless given. */
  readonly rate?: number
}

/** Drives one route with autocannon; non-2xx answers count as errors. */
export const cannon = async (options: CannonOptions): Promise<LoadResult> => {
  const result = await autocannon({
    url: options.url,
    method: options.method ?? "GET",
    connections: options.connections,
    duration: options.seconds,
    ...(options.rate !== undefined ? { overallRate: options.rate } : {}),
    ...(options.body !== undefined
      ? { body: JSON.stringify(options.body), headers: { "content-type": "application/json" } }
      : {})
  })
  return {
    throughput: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    count: result.requests.total,
    errors: result.errors + result.timeouts + result.non2xx
  }
}

/** A keep-alive agent for `jsonClient`s. */
export const keepAliveAgent = () => new http.Agent({ keepAlive: true, maxSockets: 512 })

const sharedAgent = keepAliveAgent()

/**
 * A minimal JSON client on a keep-alive agent (lighter on the shared CPU than fetch), the clients'
 * shared one unless given its own: a server whose processes share the port gets a connection where
 * its primary hands it out, so an agent whose sockets were opened before all of them served would
 * keep sending to the first.
 */
export const jsonClient = (base: string, agent: http.Agent = sharedAgent) => {
  const send = (method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> =>
    new Promise((resolve, reject) => {
      const payload = body === undefined ? undefined : JSON.stringify(body)
      const req = http.request(
        base + path,
        {
          method,
          agent,
          headers: payload === undefined ? {} : { "content-type": "application/json", "content-length": Buffer.byteLength(payload) }
        },
        (res) => {
          const chunks: Array<Buffer> = []
          res.on("data", (c: Buffer) => chunks.push(c))
          res.on("end", () => {
            const text = Buffer.concat(chunks).toString("utf8")
            let parsed: unknown = undefined
            try {
              parsed = text === "" ? undefined : JSON.parse(text)
            } catch {
              parsed = text
            }
            resolve({ status: res.statusCode ?? 0, body: parsed })
          })
          res.on("error", reject)
        }
      )
      req.on("error", reject)
      if (payload !== undefined) req.write(payload)
      req.end()
    })
  /** The answer's body; a status outside 2xx throws with the body. */
  const expectOk = async (method: string, path: string, body?: unknown) => {
    const res = await send(method, path, body)
    if (res.status < 200 || res.status >= 300) {
      throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`)
    }
    return res.body
  }
  return {
    send,
    get: (path: string) => expectOk("GET", path),
    post: (path: string, body?: unknown) => expectOk("POST", path, body ?? {})
  }
}

export type JsonClient = ReturnType<typeof jsonClient>

export const percentile = (values: ReadonlyArray<number>, p: number): number => {
  if (values.length === 0) return NaN
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!
}

/**
 * `clients` loops, each running `operation` again as soon as it finished, for `seconds`; the
 * latency of each operation is recorded. A failed operation counts as an error and its loop goes on.
 */
export const closedLoop = async (
  clients: number,
  seconds: number,
  operation: (client: number) => Promise<void>
): Promise<LoadResult> => {
  const latencies: Array<number> = []
  let errors = 0
  let firstError: unknown
  const started = performance.now()
  const deadline = started + seconds * 1000
  await Promise.all(
    Array.from({ length: clients }, async (_, client) => {
      while (performance.now() < deadline) {
        const t = performance.now()
        try {
          await operation(client)
          latencies.push(performance.now() - t)
        } catch (error) {
          errors++
          firstError ??= error
          if (errors > 100 && latencies.length === 0) throw error
        }
      }
    })
  )
  const elapsed = (performance.now() - started) / 1000
  if (firstError !== undefined) console.warn(`  ${errors} failed operations; first: ${String(firstError)}`)
  return {
    throughput: latencies.length / elapsed,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    count: latencies.length,
    errors,
    latencies,
    seconds: elapsed
  }
}

/** Rounds of one closed loop as one result: operations over the rounds' time, percentiles over all their latencies. */
export const joinRounds = (rounds: ReadonlyArray<LoadResult>): LoadResult => {
  const latencies = rounds.flatMap((round) => round.latencies ?? [])
  const seconds = rounds.reduce((sum, round) => sum + (round.seconds ?? 0), 0)
  return {
    throughput: latencies.length / seconds,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    count: latencies.length,
    errors: rounds.reduce((sum, round) => sum + round.errors, 0),
    latencies,
    seconds
  }
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
