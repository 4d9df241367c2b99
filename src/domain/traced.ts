/**
 * `traced(name)`: Effect.fn(name) when spans are made (tracing on, docs/tracing.md), and
 * Effect.fnUntraced otherwise. Effect.fn captures a stack trace and opens a span on every call even
 * with the tracer disabled, which costs many times the call itself; a request makes dozens of these
 * calls.
 */
import { Effect, FiberRef } from "effect"

export const traced = (name: string): Effect.fn.Gen & Effect.fn.NonGen =>
  ((body: (...args: Array<unknown>) => unknown, ...pipeables: Array<unknown>) => {
    const spanned = (Effect.fn(name) as (...a: Array<unknown>) => (...args: Array<unknown>) => Effect.Effect<unknown>)(body, ...pipeables)
    const plain = (Effect.fnUntraced as (...a: Array<unknown>) => (...args: Array<unknown>) => Effect.Effect<unknown>)(body, ...pipeables)
    // The switch read in one Effect operation (three through FiberRef.get and flatMap).
    const call = function(this: unknown, ...args: Array<unknown>) {
      return Effect.withFiberRuntime<unknown>((fiber) =>
        fiber.getFiberRef(FiberRef.currentTracerEnabled) ? spanned.apply(this, args) : plain.apply(this, args)
      )
    }
    return Object.defineProperty(call, "length", { value: body.length, configurable: true })
  }) as unknown as Effect.fn.Gen & Effect.fn.NonGen
