/** Real time in tests: how long an effect took, and that the server still answers promptly. */
import { expect } from "@effect/vitest"
import { Effect } from "effect"
import { request } from "./server.ts"

/** The effect's value and the real milliseconds it took. */
export const timed = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function* () {
    const started = performance.now()
    const value = yield* effect
    return { value, ms: performance.now() - started }
  })

/** The effect's value, checked to have come within `ms` real milliseconds. */
export const within = (ms: number) => <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.map(timed(effect), ({ value, ms: took }) => {
    expect(took).toBeLessThan(ms)
    return value
  })

/** The server answers /health within a second. */
export const stillServing = Effect.gen(function* () {
  const { value, ms } = yield* timed(request("GET", "/health"))
  expect(value.status).toBe(200)
  expect(value.body).toBe(true)
  expect(ms).toBeLessThan(1000)
})
