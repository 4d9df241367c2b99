/** Generated run names, adjective-animal ("crimson-otter"), as the reference names unnamed runs. */
import { Effect, Random } from "effect"
import { onFirstUse } from "./on-first-use.ts"

const names = onFirstUse<typeof import("unique-names-generator")>("unique-names-generator")

export const generateName: Effect.Effect<string> = Effect.map(Random.nextIntBetween(0, 2 ** 31 - 1), (seed) => {
  const { adjectives, animals, uniqueNamesGenerator } = names()
  return uniqueNamesGenerator({ dictionaries: [adjectives, animals], separator: "-", length: 2, seed })
    .toLowerCase()
    .replace(/[^a-z-]/g, "")
})
