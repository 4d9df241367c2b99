import { describe, expect, it } from "@effect/vitest"
import { Effect, Tracer } from "effect"
import { traced } from "../../src/domain/traced.ts"

/** A tracer that records the names of the spans it is asked to make. */
const recording = Effect.map(Effect.tracer, (base) => {
  const names: Array<string> = []
  const tracer = Tracer.make({
    span: (...args) => {
      names.push(args[0])
      return base.span(...args)
    },
    context: base.context
  })
  return { names, tracer }
})

const double = traced("double")(function* (n: number) {
  return n * 2
})

describe("traced", () => {
  it.effect("opens a span per call when the tracer is on, none when it is off, and answers alike", () =>
    Effect.gen(function* () {
      const on = yield* recording
      expect(yield* double(2).pipe(Effect.withTracer(on.tracer), Effect.withTracerEnabled(true))).toBe(4)
      expect(on.names).toEqual(["double"])
      const off = yield* recording
      expect(yield* double(3).pipe(Effect.withTracer(off.tracer), Effect.withTracerEnabled(false))).toBe(6)
      expect(off.names).toEqual([])
      expect(double.length).toBe(1)
    })
  )
})
