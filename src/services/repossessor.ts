/**
 * The repossessor: a concurrency lease that expired without being renewed or given back (its holder
 * crashed, say) is revoked, and the slots it held are given back.
 */
import { Effect, Layer, Option } from "effect"
import { ConcurrencySlots } from "../concurrency/slots.ts"
import { defineService, loopSeconds, registerServices } from "./runner.ts"

const BATCH = 100

export const repossessExpiredLeases = Effect.gen(function* () {
  const slots = yield* ConcurrencySlots
  const expired = yield* slots.leases.expiredIds(BATCH)
  for (const id of expired) {
    const found = yield* slots.leases.find(id)
    if (Option.isNone(found)) continue
    const lease = found.value
    // Without metadata there is nothing known to give back: the lease stays, as the reference keeps it.
    if (lease.slots === null) {
      yield* Effect.logWarning(`Lease ${id} should be revoked but has no metadata`)
      continue
    }
    yield* slots.release(id).pipe(Effect.catchAllCause((cause) => Effect.logWarning(`Could not revoke lease ${id}`, cause)))
  }
})

export const RepossessorService = registerServices(
  defineService({ name: "repossessor", interval: loopSeconds((s) => s.repossessor), tick: repossessExpiredLeases, singleton: true })
).pipe(Layer.provide(ConcurrencySlots.Default))
