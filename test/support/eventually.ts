/** Waiting in tests for work that background fibers (services, stream readers) finish in real time. */
import { Duration, Effect, TestClock } from "effect"

/**
 * Passes once `check` does, trying for a few seconds of real time; with `nudgeClock` the test clock
 * moves a millisecond between tries, for services whose loops wait on it.
 */
export const eventually = <A, E, R>(check: Effect.Effect<A, E, R>, options: { readonly nudgeClock?: boolean } = {}) =>
  Effect.gen(function* () {
    for (let attempt = 0; attempt < 60; attempt++) {
      const exit = yield* Effect.exit(check)
      if (exit._tag === "Success") return exit.value
      if (options.nudgeClock) yield* TestClock.adjust(Duration.millis(1))
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 100)))
    }
    return yield* check
  })
