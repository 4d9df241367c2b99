/**
 * Packages that a server at rest never calls (JSON Schema validation, cron and rrule schedules, run
 * names) are loaded when first called instead of at start: each costs its code and what it builds,
 * 0.3 to 1.3MB of heap that an idle server kept for nothing (docs/performance.md, "Memory and
 * start-up"). They are CommonJS packages, so `require` loads them without making callers wait.
 */
import { createRequire } from "node:module"

// Named apart from `require` so a bundler leaves the calls to run time.
const load = createRequire(import.meta.url)

/** The package `name`, required on the first call. */
export const onFirstUse = <A>(name: string): (() => A) => {
  let loaded: A | undefined
  return () => (loaded ??= load(name) as A)
}

/** `make()`, made on the first call and kept. */
export const memoize = <A>(make: () => A): (() => A) => {
  let made: { readonly value: A } | undefined
  return () => (made ??= { value: make() }).value
}
