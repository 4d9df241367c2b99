/**
 * The repossessor: a concurrency lease that expired without being renewed or given back (its holder
 * crashed, say) is revoked, and the slots it held are given back.
 */
import { Effect, Layer } from "effect"
import { ConcurrencySlots } from "../concurrency/slots.ts"
import { defineService, loopSeconds, registerServices } from "./runner.ts"

const BATCH = 100

export const repossessExpiredLeases = Effect.gen(function* () {
  const slots = yield* ConcurrencySlots
  // One lease per transaction: few locks held at once, and a failure loses only its own lease's turn.
  let revoked = 0
  while (revoked < BATCH) {
    const one = yield* slots.repossessOne.pipe(
      Effect.catchAllCause((cause) => Effect.as(Effect.logWarning("Could not revoke an expired lease", cause), null))
    )
    if (one === null) return
    if (!one) break
    revoked++
  }
  if (revoked === BATCH) return
  // What is still expired has no metadata, so nothing known to give back: it stays, as the reference keeps it.
  for (const id of yield* slots.leases.expiredIds(BATCH)) {
    yield* Effect.logWarning(`Lease ${id} should be revoked but has no metadata`)
  }
})

export const RepossessorService = registerServices(
  defineService({ name: "repossessor", interval: loopSeconds((s) => s.repossessor), tick: repossessExpiredLeases, singleton: true })
).pipe(Layer.provide(ConcurrencySlots.Default))
